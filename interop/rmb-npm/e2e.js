// The public npm RMB v1 redis clients against the kit's reference daemons.
//   node e2e.js client REDIS_PORT DST CMD PAYLOAD EXP TRY TIMEOUT_S
//       MessageBusClient: prepare + send to msgbus.system.local, read the replies on ret;
//       prints {"sent": message, "replies": [...]} or {"sent": message, "timeout": true}
//   node e2e.js server REDIS_PORT
//       MessageBusServer with handlers calc.add ([a, b] -> a + b) and calc.fail (throws);
//       prints "ready" once it watches its queues
"use strict";
console.log = (...a) => process.stderr.write(a.join(" ") + "\n"); // the clients log; stdout is ours
const { MessageBusClient, MessageBusServer } = require("ts-rmb-redis-client");

async function client([port, dst, cmd, payload, exp, tries, timeoutS]) {
  const c = new MessageBusClient(Number(port));
  const msg = c.prepare(cmd, dst.split(",").map(Number), Number(exp), Number(tries));
  const sent = await c.send(msg, payload);
  let timer;
  const timeout = new Promise((ok) => { timer = setTimeout(() => ok(null), Number(timeoutS) * 1000); });
  const replies = await Promise.race([c.read(sent), timeout]);
  clearTimeout(timer);
  process.stdout.write(JSON.stringify(replies ? { sent, replies } : { sent, timeout: true }) + "\n");
  await c.client.disconnect().catch(() => {}); // a read still blocked on ret (timeout) cannot end cleanly
  process.exit(0);
}

async function server([port]) {
  const s = new MessageBusServer(Number(port));
  s.withHandler("calc.add", async (msg, payload) => { const [a, b] = JSON.parse(payload); return a + b; });
  s.withHandler("calc.fail", async () => { throw new Error("calc.fail always fails"); });
  process.on("SIGTERM", async () => { await s.client.disconnect(); process.exit(0); });
  process.stdout.write("ready\n");
  await s.run();
}

const [mode, ...args] = process.argv.slice(2);
(mode === "client" ? client(args) : mode === "server" ? server(args) : Promise.reject(new Error("usage: e2e.js client|server ...")))
  .catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(2); });
