// What node-saml leaves to the service provider, checked on the verified assertion: who issued
// it, where it was meant to go (Destination, Recipient), which request it answers, and which
// login it names (wazo-auth's SAML login).
import type { Profile } from "@node-saml/node-saml";
import { DOMParser } from "@xmldom/xmldom";
import * as xpath from "xpath";
import type { ResolvedSamlConfig } from "./saml-config.ts";
import type { SamlNameId } from "./saml-sessions.ts";

/** The attributes whose first value is the login (Entra ID / ADFS claim, then the MACE name). */
export const LOGIN_ATTRIBUTES = [
  "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
  "urn:mace:dir:attribute-def:name",
];

const select = xpath.useNamespaces({
  saml: "urn:oasis:names:tc:SAML:2.0:assertion",
  samlp: "urn:oasis:names:tc:SAML:2.0:protocol",
});

function parse(xml: string): Document {
  return new DOMParser().parseFromString(xml, "text/xml") as unknown as Document;
}

function attributes(node: Node, expr: string): string[] {
  return (select(expr, node) as Attr[]).map((a) => a.value);
}

/** Throws with the reason when the verified assertion is not for this SP, ACS and request. */
export function checkAssertionContext(profile: Profile, cfg: ResolvedSamlConfig, requestId: string): void {
  if (profile.issuer !== cfg.idp.entityId) throw new Error(`unexpected issuer ${profile.issuer}`);
  const response = parse(profile.getSamlResponseXml?.() ?? "");
  const destination = attributes(response, "/samlp:Response/@Destination");
  if (destination.length && destination[0] !== cfg.acsUrl)
    throw new Error(`response destination ${destination[0]} is not this ACS`);
  const assertion = parse(profile.getAssertionXml?.() ?? "");
  const confirmations = select(
    "/saml:Assertion/saml:Subject/saml:SubjectConfirmation[@Method='urn:oasis:names:tc:SAML:2.0:cm:bearer']/saml:SubjectConfirmationData",
    assertion,
  ) as Element[];
  if (confirmations.length === 0) throw new Error("no bearer SubjectConfirmationData");
  for (const data of confirmations) {
    if (data.getAttribute("Recipient") !== cfg.acsUrl)
      throw new Error(`recipient ${data.getAttribute("Recipient")} is not this ACS`);
    const inResponseTo = data.getAttribute("InResponseTo");
    if (inResponseTo && inResponseTo !== requestId) throw new Error("the assertion answers another request");
  }
}

/** The login named by the assertion: the first value of the first login attribute present. */
export function loginOf(profile: Profile): string | null {
  const attrs = (profile.attributes ?? {}) as Record<string, unknown>;
  for (const name of LOGIN_ATTRIBUTES) {
    const value = attrs[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string" && first.trim() !== "") return first.trim();
  }
  return null;
}

export function nameIdOf(profile: Profile): SamlNameId {
  return {
    value: profile.nameID,
    format: profile.nameIDFormat ?? null,
    sessionIndex: profile.sessionIndex ?? null,
    nameQualifier: profile.nameQualifier ?? null,
    spNameQualifier: profile.spNameQualifier ?? null,
  };
}
