// A private OpenLDAP server for the LDAP tests: a temporary directory with a certificate authority
// and a server certificate made by openssl, a slapd.conf with one mdb database, slapd listening on
// free ports (ldap:// with STARTTLS, and ldaps://), loaded with an LDIF. Never the system service.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SLAPD = "/usr/sbin/slapd";
export const BASE_DN = "dc=acme,dc=example";
export const ADMIN_DN = `cn=admin,${BASE_DN}`;
export const ADMIN_PASSWORD = "admin-secret";

export interface Slapd {
  dir: string;
  host: string;
  port: number;
  ldapsPort: number;
  /** The CA that signed the server certificate (trust it to talk TLS). */
  caFile: string;
  /** A CA that signed nothing here (trusting only it must refuse the server). */
  otherCaFile: string;
  /** Stops the server, keeping its data: `start()` brings it back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function run(cmd: string, args: string[], input?: string): void {
  const r = spawnSync(cmd, args, { input, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}): ${r.stderr || r.error?.message}`);
}

/** A CA (with its key) and, when `server` is given, a certificate for 127.0.0.1 signed by it. */
function makeCertificates(dir: string): void {
  const ossl = (...args: string[]) => run("openssl", args);
  for (const ca of ["ca", "other-ca"]) {
    ossl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=Tessera test ${ca}`,
      "-keyout",
      join(dir, `${ca}.key`),
      "-out",
      join(dir, `${ca}.crt`),
    );
  }
  ossl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    join(dir, "server.key"),
    "-out",
    join(dir, "server.csr"),
  );
  writeFileSync(join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  ossl(
    "x509",
    "-req",
    "-in",
    join(dir, "server.csr"),
    "-CA",
    join(dir, "ca.crt"),
    "-CAkey",
    join(dir, "ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    join(dir, "server.ext"),
    "-out",
    join(dir, "server.crt"),
  );
}

function slapdConf(dir: string): string {
  return `include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
pidfile ${dir}/slapd.pid
argsfile ${dir}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
TLSCACertificateFile ${dir}/ca.crt
TLSCertificateFile ${dir}/server.crt
TLSCertificateKeyFile ${dir}/server.key
database mdb
maxsize 10485760
suffix "${BASE_DN}"
rootdn "${ADMIN_DN}"
rootpw ${ADMIN_PASSWORD}
directory ${dir}/data
access to attrs=userPassword by self =xw by anonymous auth by * none
access to * by * read
`;
}

async function waitForPort(port: number, proc: ChildProcess, output: () => string): Promise<void> {
  const { connect } = await import("node:net");
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) throw new Error(`slapd exited (${proc.exitCode}): ${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (open) return;
    await Bun.sleep(100);
  }
  throw new Error(`slapd did not listen on ${port}: ${output()}`);
}

/** Starts slapd loaded with `ldif` (entries under BASE_DN; the base entry is added here). */
export async function startSlapd(ldif: string): Promise<Slapd> {
  if (!existsSync(SLAPD)) {
    throw new Error(`${SLAPD} is missing: install the Debian packages slapd and ldap-utils (.ci/run does it)`);
  }
  const dir = mkdtempSync(join(tmpdir(), "tessera-slapd-"));
  run("mkdir", ["-p", join(dir, "data")]);
  makeCertificates(dir);
  writeFileSync(join(dir, "slapd.conf"), slapdConf(dir));
  // slapd drops root to the openldap user when it exists; the files must be readable by it.
  const asUser = spawnSync("id", ["openldap"]).status === 0 ? ["-u", "openldap", "-g", "openldap"] : [];
  if (asUser.length) run("chown", ["-R", "openldap:openldap", dir]);
  const port = await freePort();
  const ldapsPort = await freePort();
  let proc: ChildProcess | null = null;
  let output = "";

  const start = async () => {
    output = "";
    proc = spawn(
      SLAPD,
      [
        "-f",
        join(dir, "slapd.conf"),
        "-h",
        `ldap://127.0.0.1:${port}/ ldaps://127.0.0.1:${ldapsPort}/`,
        "-d",
        "0",
        ...asUser,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    proc.stdout!.on("data", (d) => (output += d));
    proc.stderr!.on("data", (d) => (output += d));
    await waitForPort(port, proc, () => output);
    await waitForPort(ldapsPort, proc, () => output);
  };
  const stop = async () => {
    const p = proc;
    proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((resolve) => p.once("exit", resolve));
    p.kill("SIGKILL");
    await exited;
  };
  await start();
  try {
    const base = `dn: ${BASE_DN}\nobjectClass: dcObject\nobjectClass: organization\ndc: acme\no: ACME\n\n`;
    run("ldapadd", ["-x", "-H", `ldap://127.0.0.1:${port}`, "-D", ADMIN_DN, "-w", ADMIN_PASSWORD], base + ldif);
  } catch (e) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    dir,
    host: "127.0.0.1",
    port,
    ldapsPort,
    caFile: join(dir, "ca.crt"),
    otherCaFile: join(dir, "other-ca.crt"),
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
