// TOTP (RFC 6238) through the `otpauth` library: SHA-1, 6 digits, 30-second steps — what every
// authenticator app reads from an otpauth:// URI. Pure functions; the caller stores the steps.
import { Secret, TOTP } from "otpauth";

const PERIOD = 30;
const DIGITS = 6;
/** RFC 6238 §5.2: accept the previous and the next step too (a clock off by up to 30 s). */
const WINDOW = 1;

function totpOf(secretBase32: string, label = "user", issuer = "Tessera"): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: "SHA1",
    digits: DIGITS,
    period: PERIOD,
    secret: Secret.fromBase32(secretBase32),
  });
}

/** A new 160-bit secret (RFC 4226 §4 recommends 160 bits), base32. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export async function totpEnrolment(
  secretBase32: string,
  label: string,
  issuer: string,
): Promise<{ otpauthUri: string; qrCode: string }> {
  const otpauthUri = totpOf(secretBase32, label, issuer).toString();
  // Loaded at the first enrolment (with its PNG encoder): a quiet service never draws a QR code.
  const { default: QRCode } = await import("qrcode");
  const svg = await QRCode.toString(otpauthUri, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
  return { otpauthUri, qrCode: `data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}` };
}

export const isTotpCode = (code: string) => /^\d{6}$/.test(code);

/**
 * The time step the code belongs to (within ±1 step of `now`), or null. The caller refuses a step
 * at or before the last one it accepted: a code is used once (RFC 6238 §5.2).
 */
export function matchingStep(secretBase32: string, code: string, now = Date.now()): number | null {
  if (!isTotpCode(code)) return null;
  const delta = totpOf(secretBase32).validate({ token: code, timestamp: now, window: WINDOW });
  return delta === null ? null : Math.floor(now / 1000 / PERIOD) + delta;
}

/** The code of `now` (tests, the CLI's self-check); never used to verify. */
export function currentCode(secretBase32: string, now = Date.now()): string {
  return totpOf(secretBase32).generate({ timestamp: now });
}

/** `password123456` → `{password: "password", code: "123456"}` (FreeIPA's OTP convention); only tried for a user with a confirmed factor. */
export function appendedCode(password: string): { password: string; code: string } | null {
  const m = /^(.+)(\d{6})$/s.exec(password);
  return m ? { password: m[1]!, code: m[2]! } : null;
}
