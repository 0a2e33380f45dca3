// The outbound-HTTP guard every tenant-chosen URL goes through (webhooks, logout URIs, upstream providers).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isAllowedAddress, parseCidr } from "../../src/services/outbound/addresses.ts";
import {
  checkTarget,
  type OutboundPolicy,
  OutboundRefused,
  outboundFetch,
  outboundPolicy,
  urlRefusal,
} from "../../src/services/outbound/fetch.ts";

const strict = outboundPolicy({
  allow_private_targets: [],
  allow_http: false,
  timeout_ms: 2000,
  max_response_bytes: 1024,
});
const loopbackHttp: OutboundPolicy = outboundPolicy({
  allow_private_targets: ["127.0.0.0/8"],
  allow_http: true,
  timeout_ms: 2000,
  max_response_bytes: 1024,
});

describe("addresses", () => {
  test.each([
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "::1",
    "::",
    "fe80::1",
    "fd00:ec2::254",
    "fc00::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "64:ff9b::a9fe:a9fe",
    "224.0.0.1",
    "255.255.255.255",
  ])("%s is refused", (address) => {
    expect(isAllowedAddress(address, [])).toBe(false);
  });

  test.each(["8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "1.1.1.1"])(
    "%s is public",
    (address) => {
      expect(isAllowedAddress(address, [])).toBe(true);
    },
  );

  test("an allowed range admits its addresses only", () => {
    const allowed = [parseCidr("10.0.0.0/24"), parseCidr("fd00::/8")];
    expect(isAllowedAddress("10.0.0.7", allowed)).toBe(true);
    expect(isAllowedAddress("10.0.1.7", allowed)).toBe(false);
    expect(isAllowedAddress("fd12::1", allowed)).toBe(true);
    expect(isAllowedAddress("::ffff:10.0.0.7", allowed)).toBe(true);
  });

  test("a name is not an address", () => {
    expect(isAllowedAddress("example.com", [])).toBe(false);
  });

  test.each(["10.0.0.0/33", "nonsense", "1.2.3.4/x", "::1/129", "1.2.3.4/8/9"])("%s is not a range", (text) => {
    expect(() => parseCidr(text)).toThrow();
  });
});

describe("urlRefusal", () => {
  test.each([
    ["http://example.com/hook", "must be an https URL"],
    ["ftp://example.com/", "must be an https URL"],
    ["not a url", "must be an absolute URL"],
    ["https://user:pw@example.com/", "must not carry credentials"],
    ["https://127.0.0.1/", "names a private, loopback or link-local address"],
    ["https://[::1]:8443/", "names a private, loopback or link-local address"],
    ["https://169.254.169.254/latest/meta-data", "names a private, loopback or link-local address"],
    ["https://localhost/", "names a private, loopback or link-local address"],
    ["https://api.localhost/", "names a private, loopback or link-local address"],
  ])("%s: %s", (url, reason) => {
    expect(urlRefusal(url, strict)).toBe(reason);
  });

  test("a public https URL passes; http and loopback pass when allowed", () => {
    expect(urlRefusal("https://hooks.example.com/x", strict)).toBeNull();
    expect(urlRefusal("http://127.0.0.1:8080/x", loopbackHttp)).toBeNull();
    expect(urlRefusal("http://localhost:8080/x", loopbackHttp)).toBeNull();
  });
});

describe("checkTarget resolves the name", () => {
  test("a name resolving to any private address is refused", async () => {
    const lookup = async () => ["93.184.216.34", "10.0.0.5"];
    await expect(checkTarget("https://rebind.example/", strict, lookup)).rejects.toThrow(
      "rebind.example resolves to a private, loopback or link-local address",
    );
  });

  test("a name resolving to public addresses passes", async () => {
    const url = await checkTarget("https://ok.example/a?b=1", strict, async () => ["93.184.216.34"]);
    expect(url.href).toBe("https://ok.example/a?b=1");
  });

  test("a name that does not resolve is refused", async () => {
    const lookup = async () => {
      throw new Error("ENOTFOUND");
    };
    await expect(checkTarget("https://nowhere.example/", strict, lookup)).rejects.toBeInstanceOf(OutboundRefused);
  });
});

describe("outboundFetch against a real server", () => {
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/redirect") return new Response(null, { status: 302, headers: { location: "http://10.0.0.1/" } });
        if (path === "/big") return new Response("x".repeat(4096));
        if (path === "/slow") return new Promise(() => {});
        return Response.json({ ok: true, method: req.method });
      },
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.stop(true));

  test("the loopback server is refused by default", async () => {
    await expect(outboundFetch(`${base}/`, {}, { ...strict, allowHttp: true })).rejects.toThrow(
      "names a private, loopback or link-local address",
    );
  });

  test("allowed, it answers", async () => {
    const answer = await outboundFetch(`${base}/`, { method: "POST", body: "{}" }, loopbackHttp);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ ok: true, method: "POST" });
  });

  test("a redirect is not followed", async () => {
    const answer = await outboundFetch(`${base}/redirect`, {}, loopbackHttp);
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("http://10.0.0.1/");
  });

  test("a long answer is refused", async () => {
    await expect(outboundFetch(`${base}/big`, {}, loopbackHttp)).rejects.toThrow("longer than 1024 bytes");
  });

  test("a silent server hits the deadline", async () => {
    await expect(outboundFetch(`${base}/slow`, {}, { ...loopbackHttp, timeoutMs: 200 })).rejects.toThrow(
      "did not answer in time",
    );
  });
});
