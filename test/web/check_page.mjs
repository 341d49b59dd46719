// The web example (examples/web) in headless Chromium, as a user would use it:
//
//   node check_page.mjs DIR NPM_DIR TOOLS_JSON THRESHOLD REQUEST...
//
// Serves DIR (what examples/web/build.sh wrote) from a static file server of its own on
// 127.0.0.1, opens index.html in Debian's chromium (headless, driven through the DevTools
// protocol over a pipe), and for each REQUEST types it into the text box, sets the threshold,
// clicks the button and reads the page's status, call and confidences. Each answer must equal
// the same request made of the same agent.wasm in Node (examples/web/web.js), and each call must
// be valid JSON that Ajv (NPM_DIR) finds valid against its tool's parameters. Prints one line an
// answer and MATCH, or MISMATCH and exits 1.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';

const [dir, npmDir, toolsJson, threshold, ...requests] = process.argv.slice(2);
if (!requests.length) {
  console.error('usage: node check_page.mjs DIR NPM_DIR TOOLS_JSON THRESHOLD REQUEST...');
  process.exit(2);
}

// A static file server: the page needs nothing more.
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = createServer((request, response) => {
  const path = join(resolve(dir), new URL(request.url, 'http://x').pathname);
  try {
    const body = readFileSync(path);
    response.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream' });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const url = `http://127.0.0.1:${server.address().port}/index.html`;

// Chromium with the DevTools protocol on fds 3 (commands in) and 4 (replies out), each message
// JSON ended by a NUL byte.
const profile = mkdtempSync(join(tmpdir(), 'needle-web-'));
const chromium = spawn('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe',
  `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
const pending = new Map();
let nextId = 1;
let buffered = '';
chromium.stdio[4].on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  for (let end; (end = buffered.indexOf('\0')) >= 0; buffered = buffered.slice(end + 1)) {
    const message = JSON.parse(buffered.slice(0, end));
    const waiting = pending.get(message.id);
    if (!waiting)
      continue;
    pending.delete(message.id);
    if (message.error)
      waiting.reject(new Error(`${waiting.method}: ${message.error.message}`));
    else
      waiting.resolve(message.result);
  }
});
function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  chromium.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}

function finish(code, message) {
  console.log(message);
  server.close();
  chromium.once('exit', () => {
    rmSync(profile, { recursive: true, force: true }); // once Chromium has stopped writing there
    process.exit(code);
  });
  chromium.kill();
}
const timer = setTimeout(() => finish(1, 'MISMATCH the page did not answer within 60 s'), 60000);

const { targetId } = await send('Target.createTarget', { url });
const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
const page = async (expression) =>
  (await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId)).result.value;
const until = async (expression) => {
  while (!(await page(expression)))
    await new Promise((done) => setTimeout(done, 50));
};

// The same module in Node: what the page must show.
const { instantiateAgent } = await import(resolve(dir, 'web.js'));
const agent = await instantiateAgent(readFileSync(join(dir, 'agent.wasm')));
const require = createRequire(join(resolve(npmDir), 'node_modules', 'x.js'));
const Ajv = require('ajv');
const tools = JSON.parse(readFileSync(toolsJson, 'utf8')).map((t) => t.function ?? t);

await until("document.body.dataset.ready === 'yes'");
const failures = [];
for (const request of requests) {
  await page("document.getElementById('request').value = ''; document.getElementById('status').value = ''");
  await page("document.getElementById('request').focus()");
  await send('Input.insertText', { text: request }, sessionId);
  await page(`document.getElementById('threshold').value = ${JSON.stringify(threshold)}`);
  await page("document.getElementById('ask').click()");
  await until("document.getElementById('status').value !== ''");
  const shown = await page(`({ status: document.getElementById('status').value,
    call: document.getElementById('call').value, confidence: document.getElementById('confidence').value,
    probability: document.getElementById('probability').value })`);
  const made = agent.call(request, Number(threshold));
  const expected = {
    status: made.status === 0 ? 'call' : made.status === 1 ? 'no call' : `error ${made.status}`,
    call: made.call ?? '', confidence: made.confidence.toFixed(6), probability: made.probability.toFixed(6),
  };
  console.log(`${JSON.stringify(request)}: ${shown.status} ${shown.call} (confidence ${shown.confidence}, ` +
              `token probability ${shown.probability})`);
  if (JSON.stringify(shown) !== JSON.stringify(expected))
    failures.push(`the page shows ${JSON.stringify(shown)}, the module in Node ${JSON.stringify(expected)}`);
  if (shown.status === 'call') {
    const call = JSON.parse(shown.call);
    const tool = tools.find((t) => t.name === call.name);
    const validate = tool && new Ajv({ strict: false }).compile(tool.parameters ?? { type: 'object' });
    if (!validate || !validate(call.arguments))
      failures.push(`${shown.call} is no valid call of examples/tools.json`);
  } else if (shown.status !== 'no call') {
    failures.push(`${JSON.stringify(request)}: ${shown.status}`);
  }
}
clearTimeout(timer);
finish(failures.length ? 1 : 0, failures.length ? `MISMATCH ${failures.join('; ')}` :
  `MATCH ${requests.length} requests answered in the page as by the module in Node, every call valid`);
