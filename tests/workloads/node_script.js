// A Node.js workload: files in the workdir, crypto, zlib, timers, promises,
// a worker thread; a child process and a socket must be refused.
"use strict";
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const zlib = require("zlib");
const { Worker } = require("worker_threads");

const wd = process.cwd();
const ok = (name) => console.log("ok", name);

const f = path.join(wd, "data.json");
fs.writeFileSync(f, JSON.stringify({ a: [1, 2, 3] }));
assert.deepStrictEqual(JSON.parse(fs.readFileSync(f, "utf8")), { a: [1, 2, 3] });
fs.mkdirSync(path.join(wd, "sub"), { recursive: true });
fs.renameSync(f, path.join(wd, "sub", "d.json"));
assert.deepStrictEqual(fs.readdirSync(path.join(wd, "sub")), ["d.json"]);
ok("fs");

assert.strictEqual(crypto.createHash("sha256").update("x").digest("hex").slice(0, 8), "2d711642");
assert.strictEqual(crypto.randomBytes(16).length, 16);
ok("crypto");

const data = Buffer.alloc(100000, "abc");
assert.ok(zlib.gunzipSync(zlib.gzipSync(data)).equals(data));
ok("zlib");

(async () => {
  await new Promise((r) => setTimeout(r, 10));
  await fs.promises.writeFile(path.join(wd, "async.txt"), "hi");
  assert.strictEqual(await fs.promises.readFile(path.join(wd, "async.txt"), "utf8"), "hi");
  ok("async-fs");

  const sum = await new Promise((resolve, reject) => {
    const w = new Worker("const {parentPort}=require('worker_threads');" +
      "let s=0; for (let i=0;i<1e6;i++) s+=i; parentPort.postMessage(s);", { eval: true });
    w.on("message", resolve);
    w.on("error", reject);
  });
  assert.strictEqual(sum, 499999500000);
  ok("worker-thread");

  let refused = false;
  try {
    require("child_process").execFileSync("/bin/true");
  } catch (e) {
    refused = true;
  }
  assert.ok(refused, "child_process ran");
  ok("child-process-refused");

  await new Promise((resolve, reject) => {
    const s = require("net").connect(9, "127.0.0.1");
    s.on("connect", () => reject(new Error("connected")));
    s.on("error", () => resolve());
  });
  ok("socket-refused");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
