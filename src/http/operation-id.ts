// The operationId of a route, derived once from its method and path so it is stable, camelCase and
// predictable: it is the method name of the generated TypeScript client and of every other client
// generated from the document. `GET /users/{user_uuid}/sessions` → `listUserSessions`,
// `PUT /groups/{group_uuid}/users/{user_uuid}` → `addGroupUser`. A route may override it
// (`operationId` in its options) where the derivation reads badly.

/** Verbs that end a path and name the action themselves (`POST /token/{token}/scopes/check`). */
const ACTION_SEGMENTS = new Set(["check", "register"]);

export interface OperationShape {
  method: string;
  path: string;
  hasBody: boolean;
  /** Another route accepts PUT on the same path without a body: this DELETE undoes that "add". */
  undoesAdd?: boolean;
}

export function deriveOperationId(op: OperationShape): string {
  const segments = op.path.split("/").filter(Boolean);
  const endsWithParam = isParam(segments.at(-1) ?? "");
  const isRelation = endsWithParam && segments.length >= 3 && isParam(segments.at(-3) ?? "");
  let words = segments.filter((s) => !isParam(s));
  // `/users/me/...` reads as "my": `GET /users/me/tokens` → `listMyTokens`.
  const me = words.indexOf("me");
  if (me > 0 && words[me - 1] === "users") words = [...words.slice(0, me - 1), "my", ...words.slice(me + 1)];

  let verb: string;
  let lastPlural = false;
  const last = words.at(-1) ?? "";
  if (!endsWithParam && ACTION_SEGMENTS.has(last)) {
    verb = last;
    words = words.slice(0, -1);
  } else if (op.method === "head") verb = "check";
  else if (op.method === "get") {
    lastPlural = !endsWithParam && isPlural(last);
    verb = lastPlural ? "list" : "get";
  } else if (op.method === "post") verb = "create";
  else if (op.method === "put") {
    verb = isRelation && !op.hasBody ? "add" : "update";
    lastPlural = !endsWithParam && isPlural(last);
  } else if (op.method === "delete") verb = op.undoesAdd ? "remove" : "delete";
  else verb = op.method;

  const nouns = words.map((w, i) => (i === words.length - 1 && lastPlural ? w : singular(w)));
  return verb + nouns.map(pascal).join("");
}

function isParam(segment: string): boolean {
  return segment.startsWith("{") && segment.endsWith("}");
}

/** Collections whose name is not a plural (`GET /users/{user_uuid}/external` lists links). */
const COLLECTION_WORDS = new Set(["external"]);

function isPlural(word: string): boolean {
  return COLLECTION_WORDS.has(word) || (/s$/.test(word) && !/(ss|us)$/.test(word));
}

function singular(word: string): string {
  if (!/s$/.test(word) || /(ss|us)$/.test(word)) return word;
  return word.endsWith("ies") ? `${word.slice(0, -3)}y` : word.slice(0, -1);
}

function pascal(word: string): string {
  return word
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
}
