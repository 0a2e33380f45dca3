// A Tessera user as a SCIM User (RFC 7643 §4.1) and back. Mapped to columns: `userName` ↔ username,
// `name.givenName`/`familyName` ↔ firstname/lastname, `active` ↔ enabled, `emails` ↔ the user's
// addresses (the primary one is the main address); `externalId` has a column of its own. Every
// other attribute the directory sends (the Enterprise User extension, `displayName`, `title`,
// phone numbers, the `type` of each email…) is kept as sent and given back, so nothing is lost.
import { z } from "zod";
import { CAPS, emailText, text, usernameText } from "../../domain/strings.ts";
import { localeTag } from "../../domain/validate.ts";
import { invalidSyntax, invalidValue } from "./errors.ts";
import { keyOf } from "./filter-match.ts";
import { USER_SCHEMA } from "./schemas.ts";

type Json = Record<string, unknown>;

export interface UserState {
  username: string;
  firstname: string | null;
  lastname: string | null;
  enabled: boolean;
  /** Addresses in order, the main one first. */
  emails: string[];
  externalId: string | null;
  /** The user's language (`locale`, else the first tag of `preferredLanguage`); null when neither. */
  locale: string | null;
  /** What no column holds, kept as sent. */
  attributes: Json;
  /** Write-only: set at creation, and on PUT or PATCH when it differs (password.ts). */
  password: string | null;
}

export interface StoredUser {
  uuid: string;
  username: string | null;
  firstname: string | null;
  lastname: string | null;
  enabled: boolean;
  emails: Array<{ address: string; main: boolean }>;
  externalId: string | null;
  locale: string | null;
  attributes: Json;
  groups: Array<{ uuid: string; name: string }>;
  created: Date | null;
  lastModified: Date | null;
}

/** Attributes the resource computes or columns hold: never copied into the kept attributes. */
const MAPPED = new Set(["schemas", "id", "meta", "username", "externalid", "active", "password", "groups", "locale"]);

const tag = localeTag();

/** `locale` (RFC 7643 §4.1.1): a language tag, canonicalised as the users API does; 400 `invalidValue` else. */
function localeOf(v: unknown): string | null {
  if (v === undefined || v === null || v === "") return null;
  const r = tag.safeParse(v);
  if (!r.success) throw invalidValue(`locale: ${JSON.stringify(v)} is not a language tag (such as fr or pt-BR)`);
  return r.data;
}

/**
 * The first language of `preferredLanguage` (RFC 7643 §4.1.1: an Accept-Language value, RFC 9110
 * §12.5.4, "da, en-gb;q=0.8"), highest weight first; null when none is a tag. Microsoft Entra ID maps
 * its `preferredLanguage` here and sends no `locale`: this is how its users get their language. Never
 * a refusal: the attribute is kept as sent whatever it holds.
 */
export function preferredLocaleOf(v: unknown): string | null {
  if (typeof v !== "string") return null;
  const ranked = v
    .split(",")
    .map((part, i) => {
      const [range, ...params] = part.trim().split(";");
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/i.exec(p)?.[1]).find((x) => x !== undefined);
      return { range: (range ?? "").trim(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.range !== "" && r.range !== "*" && r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const r of ranked) {
    const parsed = tag.safeParse(r.range.replace(/_/g, "-"));
    if (parsed.success) return parsed.data;
  }
  return null;
}

/** Entra sends booleans as strings (`"active": "False"`). */
export function booleanOf(v: unknown, field: string): boolean {
  if (typeof v === "boolean") return v;
  if (typeof v === "string" && /^(true|false)$/i.test(v)) return /^true$/i.test(v);
  throw invalidValue(`${field} must be a boolean`);
}

const nameText = text(CAPS.personName, { maxBytes: CAPS.personNameBytes });
const optionalName = (v: unknown, field: string): string | null => {
  if (v === undefined || v === null || v === "") return null;
  const r = nameText.safeParse(v);
  if (!r.success) throw invalidValue(`${field}: ${r.error.issues[0]?.message ?? "invalid"}`);
  return r.data;
};

/** Reads a User sent by a directory (POST, PUT, or the result of a PATCH); 400 when it cannot be stored. */
export function userStateOf(body: unknown): UserState {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw invalidSyntax("A User must be a JSON object");
  const b = body as Json;
  const get = (name: string) => {
    const k = keyOf(b, name);
    return k === undefined ? undefined : b[k];
  };
  const rawName = get("userName");
  if (typeof rawName !== "string" || rawName.trim() === "") throw invalidValue("userName is required");
  const parsed = usernameText().safeParse(rawName);
  if (!parsed.success) throw invalidValue(`userName: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  const name = get("name");
  if (name !== undefined && name !== null && (typeof name !== "object" || Array.isArray(name)))
    throw invalidValue("name must be an object");
  const nameObj = (name ?? {}) as Json;
  const sub = (k: string) => {
    const key = keyOf(nameObj, k);
    return key === undefined ? undefined : nameObj[key];
  };
  const active = get("active");
  const externalId = get("externalId");
  if (externalId !== undefined && externalId !== null && typeof externalId !== "string")
    throw invalidValue("externalId must be a string");
  const password = get("password");
  if (password !== undefined && password !== null && typeof password !== "string")
    throw invalidValue("password must be a string");

  const emails = emailsOf(get("emails"));
  const attributes: Json = {};
  for (const [k, v] of Object.entries(b)) {
    if (MAPPED.has(k.toLowerCase()) || v === null) continue;
    if (k.toLowerCase() === "name") {
      const rest = Object.fromEntries(
        Object.entries(nameObj).filter(([n]) => !["givenname", "familyname"].includes(n.toLowerCase())),
      );
      if (Object.keys(rest).length) attributes.name = rest;
      continue;
    }
    attributes[k] = v;
  }
  return {
    username: parsed.data,
    firstname: optionalName(sub("givenName"), "name.givenName"),
    lastname: optionalName(sub("familyName"), "name.familyName"),
    enabled: active === undefined || active === null ? true : booleanOf(active, "active"),
    emails,
    externalId: typeof externalId === "string" && externalId !== "" ? externalId : null,
    locale: localeOf(get("locale")) ?? preferredLocaleOf(get("preferredLanguage")),
    attributes,
    password: typeof password === "string" && password !== "" ? password : null,
  };
}

const email = emailText();

/** The addresses of `emails`, the primary one first, each once (compared case-insensitively). */
function emailsOf(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidValue("emails must be an array");
  const out: Array<{ address: string; primary: boolean }> = [];
  for (const item of v) {
    if (!item || typeof item !== "object") throw invalidValue("each of emails must be an object");
    const i = item as Json;
    const vk = keyOf(i, "value");
    const value = vk === undefined ? undefined : i[vk];
    if (value === undefined || value === null || value === "") continue;
    const parsed = z.string().pipe(email).safeParse(value);
    if (!parsed.success) throw invalidValue(`emails: ${JSON.stringify(value)} is not an email address`);
    const pk = keyOf(i, "primary");
    const primary = pk !== undefined && i[pk] !== null && booleanOf(i[pk], "emails.primary");
    if (out.some((o) => o.address.toLowerCase() === parsed.data.toLowerCase())) continue;
    out.push({ address: parsed.data, primary });
  }
  if (out.filter((o) => o.primary).length > 1) throw invalidValue("at most one of emails may be primary");
  out.sort((a, b) => Number(b.primary) - Number(a.primary));
  return out.map((o) => o.address);
}

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

/** The SCIM User of a stored user (`meta.version` added by the caller: it hashes this). */
export function userResource(u: StoredUser, base: string): Json {
  const kept = u.attributes;
  const sentEmails = Array.isArray(kept.emails) ? (kept.emails as Json[]) : [];
  const sentOf = (address: string) =>
    sentEmails.find((e) => typeof e?.value === "string" && e.value.toLowerCase() === address.toLowerCase());
  const name: Json = { ...((kept.name as Json | undefined) ?? {}) };
  if (u.firstname !== null) name.givenName = u.firstname;
  if (u.lastname !== null) name.familyName = u.lastname;
  const resource: Json = {
    ...kept,
    schemas: [USER_SCHEMA, ...Object.keys(kept).filter((k) => /^urn:/i.test(k))],
    id: u.uuid,
    ...(u.externalId !== null ? { externalId: u.externalId } : {}),
    userName: u.username ?? "",
    ...(Object.keys(name).length ? { name } : {}),
    active: u.enabled,
  };
  delete resource.locale;
  if (u.locale !== null) resource.locale = u.locale;
  delete resource.emails;
  if (u.emails.length)
    resource.emails = u.emails.map((e) => {
      const sent = sentOf(e.address);
      return {
        ...(sent ?? {}),
        value: e.address,
        type: typeof sent?.type === "string" ? sent.type : "work",
        primary: e.main,
      };
    });
  if (u.groups.length)
    resource.groups = u.groups.map((g) => ({
      value: g.uuid,
      display: g.name,
      $ref: `${base}/Groups/${g.uuid}`,
      type: "direct",
    }));
  resource.meta = {
    resourceType: "User",
    ...(u.created ? { created: iso(u.created) } : {}),
    ...(u.lastModified ? { lastModified: iso(u.lastModified) } : {}),
    location: `${base}/Users/${u.uuid}`,
  };
  return resource;
}
