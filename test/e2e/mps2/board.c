/* Board support for a Cortex-M4F under qemu-system-arm's mps2-an386 (test/e2e/mps2/cc links it
 * into every image): the vector table, a reset handler that turns the FPU on, and the one libc
 * function Debian's newlib lacks. */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void _start(void);

/* CPACR: full access to CP10 and CP11 (the FPU) before newlib's start code or the model runs a
 * floating-point instruction, which would otherwise take a UsageFault (NOCP). */
void reset(void) {
  *(volatile unsigned *)0xE000ED88u |= 0xFu << 20;
  __asm volatile("dsb\n\tisb" ::: "memory");
  _start();
}

/* The initial stack pointer (the top of the 4 MB SSRAM the image is loaded into; newlib's start
 * code then moves it where semihosting's HEAPINFO says) and the reset vector. */
__attribute__((section(".vectors"), used)) static void (*const vectors[2])(void) = {(void (*)(void))0x00400000u,
                                                                                   reset};

/* newlib 3.3's aligned_alloc calls posix_memalign, which Debian's build of it does not define. */
int posix_memalign(void **out, size_t alignment, size_t size) {
  void *block = memalign(alignment, size);
  if (!block)
    return ENOMEM;
  *out = block;
  return 0;
}
