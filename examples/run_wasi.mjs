// Runs a WASI (preview1) command module under Node's node:wasi: a wasm32 product's program,
// built as docs/targets.md shows, and the tests' (lit.cfg.py's %wasm32-run).
//
//   node examples/run_wasi.mjs PROGRAM.wasm [ARGS...]
//
// The program sees argv = [PROGRAM.wasm, ARGS...], this process's environment, and the whole
// file system preopened at "/" (so absolute paths work as on the host). Exits with the program's
// exit code; a trap or a load error prints to stderr and exits 1.
import { readFile } from 'node:fs/promises';
import process from 'node:process';

// Node 20 calls node:wasi experimental and says so on stderr when it loads, in the middle of the
// program's output: that one warning is dropped, any other still printed.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (!(warning.name === 'ExperimentalWarning' && /WASI/.test(warning.message)))
    console.warn(`${warning.name}: ${warning.message}`);
});
const { WASI } = await import('node:wasi');

const [program, ...args] = process.argv.slice(2);
if (!program) {
  console.error('run_wasi: usage: node run_wasi.mjs PROGRAM.wasm [ARGS...]');
  process.exit(2);
}

try {
  const wasi = new WASI({
    version: 'preview1',
    args: [program, ...args],
    env: process.env,
    preopens: { '/': '/' },
    returnOnExit: true,
  });
  const module = await WebAssembly.compile(await readFile(program));
  const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
  process.exitCode = wasi.start(instance);
} catch (error) {
  console.error(`run_wasi: ${program}: ${error && error.stack ? error.stack : error}`);
  process.exitCode = 1;
}
