// Standard Webhooks signatures (standardwebhooks.com, "Signature scheme"): the secret is `whsec_` followed by
// the base64 of its key bytes; the signed content is `{webhook-id}.{webhook-timestamp}.{body}`; the signature is
// the base64 of its HMAC-SHA256, sent as `v1,<signature>` in `webhook-signature`, several separated by a space
// (during a secret rotation each valid secret signs, so a receiver holding either one verifies).
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

/** A new signing secret: 32 random bytes (the scheme asks for 24 to 64). */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString("base64");
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` for one secret. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The three headers of a delivery, signed with every secret given (the current one first). */
export function webhookHeaders(secrets: string[], id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": secrets.map((s) => signWebhook(s, id, timestamp, body)).join(" "),
  };
}
