// A long-lived runner for the reference Pi's replay.mjs (../../../shared/conformance/ref*/): one
// node process that evaluates the reference's own replay.mjs afresh for each case, while Pi's
// modules, loaded by the first case, stay cached. test_conformance.py starts one per reference
// and test process; it saves the node start-up and Pi's module loading of each case (about 0.55 s
// of CPU a case).
//
//   node ref_runner.mjs REPLY_FD
//
// Requests arrive on stdin, one JSON line each: {"argv": ["/…/replay.mjs", "FILE.jsonl", "CWD",
// …], "env": {…}} (the command line after `node`, and the environment a new process would get).
// Pi's modules read some variables when they load (PI_CODING_AGENT_DIR): the caller starts a new
// runner when the environment changes other than in PYTEST_CURRENT_TEST. The answer goes to file
// descriptor REPLY_FD as JSON lines: {"start": N} (a runner that ends before it has not run the
// case), {"o": BASE64} and {"e": BASE64} for each write to stdout and stderr, in order, then
// {"end": STATUS}, STATUS being the exit status node would have had ("last": true when this
// runner ends with the case).
//
// A case runs as it would in a process of its own:
// * process.argv and process.env are the request's; the working directory and process.exitCode
//   are those this runner started with (the replay's changes to them are undone before the next
//   case);
// * the case ends when node would have exited: its module settled and no ref'ed handle, request or
//   worker thread it started is left (a bash child still holding its pipes, a pending timer);
//   lingering unref'ed worker threads (codemode's terminated sandboxes) are waited for before the
//   next case starts, so that it finds all of codemode's worker slots free, as a new process would;
// * process.exit(), an uncaught exception and an unhandled rejection end the case with node's
//   status (the code given, 1, 1) and this runner with it: the next case gets a new runner.
//   A top-level await that can no longer settle is not detected (node exits with status 13; the
//   work node's event loop waits for, such as WebAssembly compilation, is not all listed by
//   process.getActiveResourcesInfo()): the case runs until the caller's timeout.
import { writeSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { inspect } from "node:util";
import workerThreads from "node:worker_threads";

const replyFd = Number(process.argv[2]);
if (!Number.isInteger(replyFd) || replyFd < 3) {
  process.stderr.write("usage: node ref_runner.mjs REPLY_FD\n");
  process.exit(2);
}
const startCwd = process.cwd();
const realExit = process.exit.bind(process);
const realStdoutWrite = process.stdout.write;
const realStderrWrite = process.stderr.write;

// Worker threads are not listed by process.getActiveResourcesInfo(), yet a ref'ed one keeps node
// alive: track them (Pi's modules import Worker after this, so they get the tracked class).
const workers = new Map(); // worker -> whether it is ref'ed
class TrackedWorker extends workerThreads.Worker {
  constructor(...args) {
    super(...args);
    workers.set(this, true);
    this.once("exit", () => workers.delete(this));
  }
  ref() {
    if (workers.has(this)) workers.set(this, true);
    return super.ref();
  }
  unref() {
    if (workers.has(this)) workers.set(this, false);
    return super.unref();
  }
}
workerThreads.Worker = TrackedWorker;
syncBuiltinESMExports();

const WORKER_EXIT_WAIT_MS = 10_000;
let current; // the running case: { settled, status }
let caseNumber = 0;

const reply = (message) => {
  const line = Buffer.from(JSON.stringify(message) + "\n");
  for (let offset = 0; offset < line.length; ) offset += writeSync(replyFd, line, offset);
};

const capture = (key, realWrite, stream) =>
  function write(chunk, encoding, callback) {
    if (!current || current.done) return realWrite.call(stream, chunk, encoding, callback);
    if (typeof encoding === "function") [callback, encoding] = [encoding, undefined];
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, encoding) : Buffer.from(chunk);
    reply({ [key]: bytes.toString("base64") });
    if (callback) process.nextTick(callback);
    return true;
  };
process.stdout.write = capture("o", realStdoutWrite, process.stdout);
process.stderr.write = capture("e", realStderrWrite, process.stderr);

// Ends the case with STATUS; `fatal`: node would have stopped here, so this runner stops too.
const finish = (status, fatal) => {
  if (!current || current.done) return;
  current.done = true;
  reply(fatal ? { end: status, last: true } : { end: status });
  if (fatal) realExit(0);
  current.resolve();
};

process.exit = (code) => {
  if (!current || current.done) return realExit(code);
  const status = code ?? process.exitCode ?? 0;
  finish(Number(status) || 0, true);
};
const crash = (error) => {
  if (!current || current.done) {
    realStderrWrite.call(process.stderr, `ref_runner: ${inspect(error)}\n`);
    realExit(70);
  }
  process.stderr.write(`${inspect(error)}\n\nNode.js ${process.version}\n`);
  finish(1, true);
};
process.on("uncaughtException", crash);
process.on("unhandledRejection", crash);

const count = (names) => {
  const counts = new Map();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return counts;
};
// Nothing of the case keeps node alive: no more handles or requests than before it started, and no
// ref'ed worker thread.
const idle = (baseline) => {
  for (const [name, n] of count(process.getActiveResourcesInfo())) {
    if (n > (baseline.get(name) ?? 0)) return false;
  }
  for (const refed of workers.values()) if (refed) return false;
  return true;
};
const tick = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref());

const restore = (env) => {
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  Object.assign(process.env, env);
  if (process.cwd() !== startCwd) process.chdir(startCwd);
  process.exitCode = undefined;
};

const runCase = async ({ argv, env }) => {
  restore(env);
  process.argv = [process.execPath, ...argv];
  reply({ start: caseNumber + 1 });
  const baseline = count(process.getActiveResourcesInfo());
  const url = `${pathToFileURL(argv[0]).href}?case=${++caseNumber}`;
  const ended = new Promise((resolve) => {
    current = { done: false, settled: false, resolve };
  });
  const state = current;
  import(url).then(
    () => {
      state.settled = true;
    },
    (error) => {
      state.settled = true;
      crash(error);
    },
  );
  (async () => {
    while (!state.done) {
      await tick(state.settled ? 1 : 10);
      if (state.settled && !state.done && idle(baseline)) {
        finish(Number(process.exitCode ?? 0) || 0, false);
      }
    }
  })();
  await ended;
  current = undefined;
  // A worker thread that will not exit would hold a codemode slot that a new process has free.
  for (let waited = 0; workers.size > 0; waited += 1) {
    if (waited >= WORKER_EXIT_WAIT_MS) realExit(0);
    await tick(1);
  }
};

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  await runCase(JSON.parse(line));
}
