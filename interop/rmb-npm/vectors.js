// Cross-implementation vectors for the kit's RMB v1 signer, made by the public npm client
// ts-rmb-http-client 1.1.2 and checked with its own verifier (@polkadot/keyring underneath).
//
//   node vectors.js sign   < cases.jsonl   -> one line per case: {case, key_type, public_key, message}
//   node vectors.js verify < checks.jsonl  -> one line per check: {case, ok, error}
//
// Single-destination messages go through the client's public API (prepare + send) against a
// stand-in proxy on 127.0.0.1 that records the body it posts; the client refuses several
// destinations, so those are signed by its own challenge/sign functions, taken from its module
// (they are not exported). Verification calls the client's own verify(), whose twin look-up
// (a GraphQL query) is answered by the same local stand-in. No other network is used.
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const Module = require("module");

console.log = (...a) => process.stderr.write(a.join(" ") + "\n"); // the client logs; stdout is ours

const RealDate = Date;
let fixedNow = null; // ms; the client stamps `now` from new Date()
global.Date = class extends RealDate {
  constructor(...a) { if (a.length === 0 && fixedNow !== null) super(fixedNow); else super(...a); }
  static now() { return fixedNow !== null ? fixedNow : RealDate.now(); }
};

function clientInternals() {
  const file = path.join(path.dirname(require.resolve("ts-rmb-http-client")), "httpClient.js");
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(fs.readFileSync(file, "utf8") + "\nmodule.exports.__internals = { challenge, sign, verify };", file);
  return { HTTPMessageBusClient: m.exports.HTTPMessageBusClient, ...m.exports.__internals };
}

function standIn() {
  const state = { posted: [], accountID: null };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      res.setHeader("Content-Type", "application/json");
      if (req.url.startsWith("/graphql")) {
        res.end(JSON.stringify({ data: { twins: [{ accountID: state.accountID }] } }));
      } else {
        state.posted.push(body);
        res.end(JSON.stringify({ retqueue: "ret-from-proxy" }));
      }
    });
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok({ server, state, url: `http://127.0.0.1:${server.address().port}` })));
}

async function publicKey(mnemonic, type) {
  const { Keyring } = require("@polkadot/keyring");
  const { waitReady } = require("@polkadot/wasm-crypto");
  await waitReady();
  return Buffer.from(new Keyring({ type }).addFromMnemonic(mnemonic).publicKey).toString("hex");
}

async function signCase(c, lib, stand) {
  if (c.dst.length === 1) { // the public API, as a user of the client would call it
    const client = new lib.HTTPMessageBusClient(c.src, stand.url, stand.url + "/graphql", c.mnemonic, c.key_type);
    fixedNow = c.now * 1000;
    const msg = client.prepare(c.cmd, c.dst, c.exp, c.try);
    stand.state.posted.length = 0;
    await client.send(msg, c.payload);
    fixedNow = null;
    return JSON.parse(stand.state.posted[0]); // the body exactly as it went on the wire
  }
  const msg = { ver: 1, uid: c.uid || "", cmd: c.cmd, exp: c.exp, dat: Buffer.from(c.payload, "utf8").toString("base64"),
                src: c.src, dst: c.dst, ret: c.ret || "", try: c.try, shm: "", now: c.now, err: "", sig: "", pxy: c.pxy };
  msg.sig = await lib.sign(lib.challenge(msg), c.mnemonic, c.key_type);
  return msg;
}

async function main() {
  const mode = process.argv[2];
  const lines = fs.readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
  const lib = clientInternals();
  const stand = await standIn();
  try {
    for (const line of lines) {
      const c = JSON.parse(line);
      if (mode === "sign") {
        const message = await signCase(c, lib, stand);
        const public_key = await publicKey(c.mnemonic, c.key_type);
        process.stdout.write(JSON.stringify({ case: c.case, key_type: c.key_type, public_key, message }) + "\n");
      } else if (mode === "verify") {
        stand.state.accountID = "0x" + c.public_key;
        try {
          await lib.verify(c.message, stand.url + "/graphql");
          process.stdout.write(JSON.stringify({ case: c.case, ok: true }) + "\n");
        } catch (e) {
          process.stdout.write(JSON.stringify({ case: c.case, ok: false, error: e.message }) + "\n");
        }
      } else {
        throw new Error("usage: node vectors.js sign|verify < cases.jsonl");
      }
    }
  } finally {
    stand.server.close();
  }
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(2); });
