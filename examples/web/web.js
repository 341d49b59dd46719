// The page's side of the web example (README.md): agent.wasm instantiated with no WASI host (each
// import it declares is a stub that throws: nothing the model calls reaches one), and NAME_call on
// a request through agent_web.c's exports. Plain ES module: the page imports it, and so does the
// test that holds the page's answers to the same module run in Node (test/web/check_page.mjs).

/// The model in `bytes` (agent.wasm), ready to answer requests.
export async function instantiateAgent(bytes) {
  const module = await WebAssembly.compile(bytes);
  const imports = {};
  for (const { module: from, name } of WebAssembly.Module.imports(module)) {
    imports[from] ??= {};
    imports[from][name] = () => {
      throw new Error(`agent.wasm called ${from}.${name}, which the page does not provide`);
    };
  }
  const { exports } = await WebAssembly.instantiate(module, imports);
  exports._initialize?.();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  return {
    /// NAME_call on `text` (docs/c-interface.md): { status, call (the JSON, or null), confidence,
    /// probability }. Status 0 is a call, 1 "no call", anything else an error.
    call(text, threshold) {
      const bytes = encoder.encode(text);
      if (bytes.length > exports.web_text_capacity())
        return { status: 'too long', call: null, confidence: 0, probability: 0 };
      new Uint8Array(exports.memory.buffer, exports.web_text(), bytes.length).set(bytes);
      const status = exports.web_call(bytes.length, threshold);
      const out = new Uint8Array(exports.memory.buffer, exports.web_out(), exports.web_out_length());
      return {
        status,
        call: status === 0 ? decoder.decode(out) : null,
        confidence: exports.web_confidence(),
        probability: exports.web_probability(),
      };
    },
  };
}
