// The schema oracle: xgrammar (npm @mlc-ai/web-xgrammar, its WASM build) for the token masks of
// schema-constrained decoding, and Ajv for whether a text meets a schema. Run by Node in the
// tests only, never part of needlec or a product.
//
//   node oracle.mjs NPM_DIR masks TOKENIZER_JSON VOCAB_SIZE < requests.jsonl
//   node oracle.mjs NPM_DIR validate < requests.jsonl
//
// NPM_DIR is where scripts/install-deps.sh installed the npm packages (build-npm).
//
// masks: TOKENIZER_JSON is a Hugging Face tokenizer.json, VOCAB_SIZE the model's (the logits').
// Each input line is {"schema": {...}, "stop": [ids], "walk": [ids]}; its output line is
// {"masks": [R0, ..., Rn], "terminated": bool}, n = walk.length: Ri is the set of tokens allowed
// before walk[i] is taken, Rn the set after the whole walk (empty once a stop token is taken),
// each as sorted half-open ranges [[lo, hi], ...]; terminated says whether the walk took a stop
// token. The grammar is xgrammar's for the schema with no free whitespace, on one line, with
// separators "," and ":", strict (no properties or items the schema does not name). A walk token
// the grammar rejects gives {"error": "token N at step i rejected"} instead, a schema xgrammar
// cannot compile {"error": "schema: ..."}.
//
// validate: each input line is {"schema": {...}, "text": "..."}; its output line is
// {"parse": bool, "valid": bool, "errors": ...}: errors is the parse error's message when the text
// is not JSON, Ajv's errors when it does not meet the schema, null when it does. A schema Ajv
// cannot compile gives {"error": "schema: ..."}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const [npmDir, mode, tokenizerFile, vocabSizeArg] = process.argv.slice(2);
const vocabSize = Number(vocabSizeArg);
const usable = mode === "validate" ? !tokenizerFile
             : mode === "masks" && tokenizerFile && Number.isInteger(vocabSize) && vocabSize > 0;
if (!npmDir || !usable) {
  console.error("usage: node oracle.mjs NPM_DIR masks TOKENIZER_JSON VOCAB_SIZE < requests.jsonl\n" +
                "       node oracle.mjs NPM_DIR validate < requests.jsonl");
  process.exit(2);
}
const modules = join(npmDir, "node_modules");
const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");
async function* requests() {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity }))
    if (line !== "")
      yield JSON.parse(line);
}

async function validate() {
  const Ajv = createRequire(join(modules, "/"))("ajv");
  const ajv = new Ajv({ strict: false, allErrors: true });
  // The formats tool-call schemas use (ajv-formats is not installed), the times per RFC 3339
  // (5.6; "T" and "Z" in either case). A date must exist; a leap second may end any minute.
  const leap = (y) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const fullDate = (s) => {
    const [, y, m, d] = (/^(\d{4})-(\d{2})-(\d{2})$/.exec(s) ?? []).map(Number);
    return m >= 1 && m <= 12 && d >= 1 &&
           d <= [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
  };
  const fullTime = /^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;
  ajv.addFormat("date", fullDate);
  ajv.addFormat("time", fullTime);
  ajv.addFormat("date-time", (s) => /^.{10}t/i.test(s) && fullDate(s.slice(0, 10)) &&
                                    fullTime.test(s.slice(11)));
  // A dot-atom local part (not a quoted one) at a host name of one or more labels.
  const atom = "[\\w!#$%&'*+/=?^`{|}~-]+", label = "[a-z0-9]([a-z0-9-]*[a-z0-9])?";
  ajv.addFormat("email", new RegExp(`^${atom}(\\.${atom})*@${label}(\\.${label})*$`, "i"));
  ajv.addFormat("uuid", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);

  const validators = new Map();
  for await (const { schema, text } of requests()) {
    const key = JSON.stringify(schema);
    try {
      if (!validators.has(key))
        validators.set(key, ajv.compile(schema));
    } catch (e) {
      emit({ error: `schema: ${e.message}` });
      continue;
    }
    const check = validators.get(key);
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      emit({ parse: false, valid: false, errors: e.message });
      continue;
    }
    const valid = check(value);
    emit({ parse: true, valid, errors: valid ? null : check.errors });
  }
}

async function masks() {
  // The bundle is UMD in a "type": "module" package, so Node loads it as ESM: it then installs
  // itself as globalThis.xgrammar, and its Emscripten part needs CommonJS's require and __filename.
  const bundle = join(modules, "@mlc-ai", "web-xgrammar", "lib", "index.js");
  globalThis.require = createRequire(bundle);
  globalThis.__filename = bundle;
  // xgrammar's C++ log goes to console.log (warnings, e.g. a rejected token) and console.error
  // (a fatal error, then "Aborted()"), as bound when the WASM starts at the first call. Both go to
  // stderr, so that stdout holds only our lines; the last fatal error is kept for our error line.
  let fatal = "";
  const stderr = console.error;
  console.log = console.error = (...args) => {
    const message = args.join(" ");
    if (message.startsWith("[FATAL]"))
      fatal = message.replace(/^\[FATAL\] \S+:\d+: /, ""); // without its C++ file and line
    stderr(...args);
  };
  await import(pathToFileURL(bundle).href);
  const { TokenizerInfo, GrammarCompiler, GrammarMatcher } = globalThis.xgrammar;

  // The vocabulary by id as the tokenizer writes its tokens; xgrammar decodes them (ByteLevel's
  // alphabet, <0xNN> and ▁) by the vocab type. Added tokens go in as their text, as xgrammar's
  // TokenizerInfo.from_huggingface does, except the special ones: to the grammar those would be
  // ordinary text, which needlec never writes in a call (docs/tool-calls.md), so they get "",
  // which xgrammar makes a special token, never allowed (a stop token still ends the text). An
  // id with no token gets "" too.
  const spec = JSON.parse(readFileSync(tokenizerFile, "utf8"));
  const vocab = new Array(vocabSize).fill("");
  for (const [token, id] of Object.entries(spec.model.vocab ?? {}))
    if (id < vocabSize)
      vocab[id] = token;
  for (const { id, content, special } of spec.added_tokens ?? [])
    if (id < vocabSize)
      vocab[id] = special ? "" : content;
  const decoders = spec.decoder?.type === "Sequence" ? spec.decoder.decoders : [spec.decoder];
  const vocabType = decoders.some((d) => d?.type === "ByteLevel") ? "byte_level"
                  : spec.model.byte_fallback ? "byte_fallback" : "raw";

  // The stop tokens belong to the TokenizerInfo, so a compiler (and its grammars) per stop list.
  const compilers = new Map();
  const compilerFor = async (stop) => {
    const key = JSON.stringify(stop);
    if (!compilers.has(key)) {
      const info =
          await TokenizerInfo.createTokenizerInfo(vocab, vocabType, false, vocabSize, stop);
      const compiler = await GrammarCompiler.createGrammarCompiler(info);
      compilers.set(key, { compiler, grammars: new Map() });
    }
    return compilers.get(key);
  };

  // The mask's set bits as half-open ranges; bits at or past the vocabulary size are padding.
  const ranges = (mask) => {
    const out = [];
    for (let id = 0; id < vocabSize; ++id) {
      if (!((mask[id >>> 5] >>> (id & 31)) & 1))
        continue;
      if (out.length && out[out.length - 1][1] === id)
        out[out.length - 1][1] = id + 1;
      else
        out.push([id, id + 1]);
    }
    return out;
  };

  for await (const { schema, stop, walk } of requests()) {
    const { compiler, grammars } = await compilerFor(stop);
    const key = JSON.stringify(schema);
    try {
      // A schema xgrammar does not take aborts the WASM call; later calls still work.
      if (!grammars.has(key))
        grammars.set(key, await compiler.compileJSONSchema(key, false, -1, [",", ":"], true));
    } catch (e) {
      emit({ error: `schema: ${fatal || e.message}` });
      fatal = "";
      continue;
    }
    const matcher = await GrammarMatcher.createGrammarMatcher(grammars.get(key));
    const masks = [];
    let error = null;
    for (let i = 0; i <= walk.length && !error; ++i) {
      // Once a stop token is taken xgrammar aborts on a mask request: nothing more is allowed.
      masks.push(matcher.isTerminated() ? [] : ranges(await matcher.getNextTokenBitmask()));
      if (i < walk.length && !matcher.acceptToken(walk[i]))
        error = `token ${walk[i]} at step ${i} rejected`;
    }
    emit(error ? { error } : { masks, terminated: matcher.isTerminated() });
    matcher.dispose();
  }
}

await (mode === "validate" ? validate() : masks());
