// Unknown configuration keys. A typo (`rest_api: {prot: 45040}`, `log_levl: debug`) would otherwise be
// dropped silently and the default used: every key of the file is checked against the schema, and
// each unknown one is named with the closest known key.
import type { z } from "zod";
import { editDistance as distance, typoAllowance } from "../domain/text-distance.ts";

const PLUGINS_LISTED = "Tessera's plugins are listed under `plugins` (docs/plugins.md)";
const STRAY_QUOTE = (key: string) =>
  `a key with a stray quote, as wazo-auth's shipped config.yml spells it: wazo-auth ignores it too; the setting is \`${key}\``;

/**
 * Keys of wazo-auth's configuration (its defaults and the config.yml it has shipped, current and
 * recent releases) that Tessera has no use for, each with why: accepted whatever lies below them, with
 * one warning line each, so that a wazo-auth config.yml loads.
 */
const WAZO_AUTH_IGNORED: Record<string, string> = {
  user: "Tessera runs as the user that starts it (systemd's `User=`)",
  config_file: "the file is chosen with `--config` or TESSERA_CONFIG",
  enabled_backend_plugins: PLUGINS_LISTED,
  enabled_external_auth_plugins: PLUGINS_LISTED,
  idp_plugins: PLUGINS_LISTED,
  enabled_idp_plugins: PLUGINS_LISTED,
  oauth2_synchronization_ws_url_template:
    "external-auth redirects are served by Tessera itself (`oauth2_redirect_base_url`)",
  oauth2_synchronization_redirect_url_template:
    "external-auth redirects are served by Tessera itself (`oauth2_redirect_base_url`)",
  db_upgrade_on_startup: "migrations always run at start",
  db_connect_retry_timeout_seconds: "the database is waited for `db_timeout` seconds a request (docs/operations.md)",
  confd_db_uri: "wazo-auth itself no longer reads it",
  confd: "Tessera does not call wazo-confd",
  consul: "service discovery (Consul) is not supported",
  service_discovery: "service discovery (Consul) is not supported",
  pid_filename: "Tessera runs in the foreground and writes no PID file",
  foreground: "Tessera always runs in the foreground",
  "email_confirmation_get_response_body_template'": STRAY_QUOTE("email_confirmation_get_response_body_template"),
  "email_confirmation_get_reponse_body_template'": STRAY_QUOTE("email_confirmation_get_response_body_template"),
  "email_confirmation_get_mimetype'": STRAY_QUOTE("email_confirmation_get_mimetype"),
  "rest_api.max_threads": "Bun serves without a thread pool (`workers` adds processes)",
  "rest_api.certificate": "TLS is a reverse proxy's (docs/security.md)",
  "rest_api.private_key": "TLS is a reverse proxy's (docs/security.md)",
  "rest_api.https": "TLS is a reverse proxy's (docs/security.md)",
  "saml.domains": "SAML is configured per tenant through the API",
  "saml.xmlsec_binary": "signatures are checked without xmlsec1",
  "saml.xml_files_dir": "IdP metadata is stored in the database",
};

/** The stock external-auth plugins read a top-level section named after them (`google:`…). */
const STOCK_EXTERNAL_AUTH = ["google", "microsoft", "mobile"];

// Zod's internal definition, as far as this walk needs it.
interface Def {
  type: string;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  shape?: Record<string, z.ZodType>;
  in?: z.ZodType;
}
const defOf = (s: z.ZodType) => (s as unknown as { def: Def }).def;

/** The object or record a schema describes once defaults, nullability and pipes are stripped. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = defOf(s);
    if (def.innerType && ["default", "prefault", "nullable", "optional", "readonly", "catch"].includes(def.type))
      s = def.innerType;
    else if (def.type === "pipe" && def.in) s = def.in;
    else return s;
  }
}

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Every key path the schema knows (record entries as `*`), for suggestions. */
function knownPaths(schema: z.ZodType, prefix = ""): string[] {
  const s = unwrap(schema);
  const def = defOf(s);
  if (def.type === "object") {
    const shape = (s as unknown as { shape: Record<string, z.ZodType> }).shape;
    return Object.entries(shape).flatMap(([k, v]) => [prefix + k, ...knownPaths(v, `${prefix}${k}.`)]);
  }
  if (def.type === "record" && def.valueType) return knownPaths(def.valueType, `${prefix}*.`);
  if (def.type === "union") return (def.options ?? []).flatMap((o) => knownPaths(o, prefix));
  return [];
}

/** The known key closest to an unknown one: by its full path, or by its last segment anywhere. */
function closest(path: string[], known: string[]): string | null {
  const full = path.join(".");
  const last = path[path.length - 1]!;
  let best: { key: string; score: number } | null = null;
  for (const candidate of known) {
    // A record entry's path takes the unknown key's own segments where the schema has `*`.
    const segments = candidate.split(".").map((seg, i) => (seg === "*" ? (path[i] ?? seg) : seg));
    const concrete = segments.join(".");
    const byPath = distance(full, concrete);
    const name = segments[segments.length - 1]!;
    const byName = distance(last, name) + 1; // moved to another section
    // An abbreviation (`prio` for `priority`) at the same place.
    const byPrefix =
      last.length >= 3 && name.startsWith(last) && concrete.slice(0, -name.length) === full.slice(0, -last.length)
        ? 1
        : Infinity;
    const score = Math.min(byPath, byName, byPrefix);
    if (score <= typoAllowance(last) && (!best || score < best.score)) best = { key: concrete, score };
  }
  return best?.key ?? null;
}

/**
 * The keys of a raw configuration the schema does not know: `unknown`, each as a message naming the
 * closest known key (`rest_api.prot: unknown key; did you mean \`rest_api.port\`?`), refused; and
 * `ignored`, wazo-auth's keys without use here, each as a warning line saying why.
 */
export function checkKeys(raw: Record<string, unknown>, schema: z.ZodType): { unknown: string[]; ignored: string[] } {
  const known = knownPaths(schema);
  const plugins =
    isMapping(raw.plugins) && isMapping(raw.plugins.external_auth) ? Object.keys(raw.plugins.external_auth) : [];
  const pluginSections = new Set([...STOCK_EXTERNAL_AUTH, ...plugins]);
  const problems: string[] = [];
  const ignored: string[] = [];

  const walk = (value: unknown, schemaAt: z.ZodType, path: string[]) => {
    const s = unwrap(schemaAt);
    const def = defOf(s);
    if (!isMapping(value)) return; // a wrong type is the schema's to report
    if (def.type === "record" && def.valueType) {
      for (const [k, v] of Object.entries(value)) walk(v, def.valueType, [...path, k]);
    } else if (def.type === "union") {
      // A plugin entry: a module path, or an object whose keys are checked.
      const object = (def.options ?? []).find((o) => defOf(unwrap(o)).type === "object");
      if (object) walk(value, object, path);
    } else if (def.type === "object") {
      const shape = (s as unknown as { shape: Record<string, z.ZodType> }).shape;
      for (const [k, v] of Object.entries(value)) {
        const at = [...path, k];
        const dotted = at.join(".");
        if (shape[k]) walk(v, shape[k], at);
        else if (Object.hasOwn(WAZO_AUTH_IGNORED, dotted))
          ignored.push(`${dotted}: wazo-auth's key, ignored: ${WAZO_AUTH_IGNORED[dotted]}`);
        else if (!(path.length === 0 && pluginSections.has(k))) {
          const hint = closest(at, known);
          problems.push(`${dotted}: unknown key${hint ? `; did you mean \`${hint}\`?` : ""}`);
        }
      }
    }
  };
  walk(raw, schema, []);
  return { unknown: problems, ignored };
}
