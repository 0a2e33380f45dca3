// Reads what Tessera needs from an identity provider's SAML metadata (the XML file an Okta, Entra
// ID, Keycloak or ADFS administrator downloads): its entity id, where to send the browser for login
// and logout (HTTP-Redirect binding), and the certificates its signatures must verify against.
// Only reading: signatures are verified by @node-saml/node-saml.
import { DOMParser } from "@xmldom/xmldom";
import * as xpath from "xpath";

const MD = "urn:oasis:names:tc:SAML:2.0:metadata";
const DS = "http://www.w3.org/2000/09/xmldsig#";
const REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";

export interface IdpMetadata {
  entityId: string;
  ssoUrl: string;
  sloUrl: string | null;
  /** PEM certificates for signing (use="signing" or no use). */
  certificates: string[];
}

export class InvalidMetadata extends Error {}

const select = xpath.useNamespaces({ md: MD, ds: DS });

export function parseIdpMetadata(xml: string): IdpMetadata {
  let doc: Document;
  try {
    // Metadata never needs a DTD; refusing one rules out entity-expansion tricks.
    if (/<!DOCTYPE/i.test(xml)) throw new InvalidMetadata("a DOCTYPE is not allowed");
    doc = new DOMParser({
      onError: (level, message) => {
        if (level !== "warning") throw new InvalidMetadata(message);
      },
    }).parseFromString(xml, "text/xml") as unknown as Document;
  } catch (e) {
    throw e instanceof InvalidMetadata ? e : new InvalidMetadata((e as Error).message);
  }
  const descriptor = first(doc, "//md:EntityDescriptor[md:IDPSSODescriptor]");
  if (!descriptor) throw new InvalidMetadata("no EntityDescriptor with an IDPSSODescriptor");
  const entityId = (descriptor as Element).getAttribute("entityID");
  if (!entityId) throw new InvalidMetadata("the EntityDescriptor has no entityID");
  const sso = first(descriptor, `md:IDPSSODescriptor/md:SingleSignOnService[@Binding='${REDIRECT}']/@Location`);
  if (!sso?.nodeValue) throw new InvalidMetadata("no SingleSignOnService with the HTTP-Redirect binding");
  const slo = first(descriptor, `md:IDPSSODescriptor/md:SingleLogoutService[@Binding='${REDIRECT}']/@Location`);
  const certNodes = select(
    "md:IDPSSODescriptor/md:KeyDescriptor[not(@use) or @use='signing']/ds:KeyInfo/ds:X509Data/ds:X509Certificate/text()",
    descriptor,
  ) as Node[];
  const certificates = certNodes.map((n) => toPem(n.nodeValue ?? "")).filter((c): c is string => c !== null);
  if (certificates.length === 0) throw new InvalidMetadata("no signing certificate (KeyDescriptor/X509Certificate)");
  return { entityId, ssoUrl: sso.nodeValue, sloUrl: slo?.nodeValue ?? null, certificates };
}

function first(node: Node, expr: string): Node | null {
  const found = select(expr, node) as Node[];
  return found[0] ?? null;
}

function toPem(base64: string): string | null {
  const body = base64.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+=*$/.test(body)) return null;
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----\n`;
}
