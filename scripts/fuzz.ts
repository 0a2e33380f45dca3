// npm run fuzz -- --requests N --seed S [--db pglite|postgres]: a longer fuzzing campaign than the
// test suite's (tests/http/fuzz.test.ts), over every operation of the served OpenAPI document, on a
// fresh database (postgres: TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres).
// Prints the number of requests tried, the statuses seen and every 5xx or malformed error body;
// exits 1 when there is any.
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { createTestApp } from "../tests/helpers/app.ts";
import { adminToken } from "../tests/helpers/fixtures.ts";
import { generateRequests, operationsOf, runFuzz, seedResources } from "../tests/helpers/fuzz.ts";
import { startSmtp } from "../tests/helpers/smtp-server.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "20000" },
    seed: { type: "string", default: String(Date.now() % 2 ** 31) },
    db: { type: "string", default: "pglite" },
  },
});
const requests = Number(values.requests);
const seed = Number(values.seed);
if (!Number.isInteger(requests) || requests < 1 || !Number.isInteger(seed)) {
  console.error("usage: npm run fuzz -- --requests N --seed S [--db pglite|postgres]");
  process.exit(2);
}
if (values.db === "postgres") process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";

const smtp = await startSmtp();
const t = await createTestApp(values.db === "postgres" ? "postgres" : "pglite", {
  config: { smtp: { hostname: "127.0.0.1", port: smtp.port }, enabled_http_plugins: { user_registration: true } },
});
let failed = false;
try {
  const token = await adminToken(t.app);
  const ctx = await seedResources(t, token);
  const ops = operationsOf(parseYaml((await t.request("GET", "/0.1/api/api.yml")).text));
  console.log(`fuzz: ${requests} requests over ${ops.length} operations, seed ${seed}, ${t.kind}`);
  const started = performance.now();
  const { findings, statuses } = await runFuzz(t.app, generateRequests(ops, ctx, requests, seed), async (r) => {
    const res = await t.http.request(
      r.path,
      { method: r.method, headers: r.headers, body: r.body },
      { remoteAddr: "127.0.0.1" },
    );
    return { status: res.status, text: await res.text() };
  });
  console.log(
    `tried ${requests} requests in ${((performance.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify(statuses)}`,
  );
  for (const f of findings)
    console.log(
      `${f.problem}: ${f.request.method} ${f.request.path.slice(0, 300)} → ${f.status} ${f.body.slice(0, 200)}`,
    );
  const alive =
    (await t.request("HEAD", `/0.1/token/${token}`)).status === 204 &&
    (await t.request("GET", "/0.1/users", { token })).status === 200;
  if (!alive) console.log("the service no longer serves the admin's token check or user list");
  console.log(`${findings.length} problem(s) found`);
  failed = findings.length > 0 || !alive;
} finally {
  await t.close();
  await smtp.close();
}
process.exit(failed ? 1 : 0);
