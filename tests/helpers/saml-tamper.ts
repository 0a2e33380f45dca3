// Hostile rewrites of a signed SAMLResponse for the signature-wrapping tests. They move and copy
// elements with a DOM; they sign nothing.
import { DOMParser, XMLSerializer } from "@xmldom/xmldom";

const SAML = "urn:oasis:names:tc:SAML:2.0:assertion";
const SAMLP = "urn:oasis:names:tc:SAML:2.0:protocol";
const DS = "http://www.w3.org/2000/09/xmldsig#";

type Doc = ReturnType<DOMParser["parseFromString"]>;

function rewrite(samlResponse: string, fn: (doc: Doc, response: Element, signed: Element) => void): string {
  const doc = new DOMParser().parseFromString(Buffer.from(samlResponse, "base64").toString("utf8"), "text/xml");
  const response = doc.documentElement as unknown as Element;
  const signed = doc.getElementsByTagNameNS(SAML, "Assertion")[0] as unknown as Element;
  fn(doc, response, signed);
  return Buffer.from(new XMLSerializer().serializeToString(doc)).toString("base64");
}

/** An unsigned copy of the signed assertion naming `login`, with a fresh ID (or the same one). */
function evilCopy(signed: Element, login: string, sameId: boolean): Element {
  const evil = signed.cloneNode(true) as Element;
  for (const sig of Array.from(evil.getElementsByTagNameNS(DS, "Signature"))) sig.parentNode!.removeChild(sig);
  if (!sameId) evil.setAttribute("ID", `_evil-${crypto.randomUUID()}`);
  for (const v of Array.from(evil.getElementsByTagNameNS(SAML, "AttributeValue"))) v.textContent = login;
  return evil;
}

/** Only the attribute value changed, the signature left as it was. */
export const tamperLogin = (r: string, login: string) =>
  rewrite(r, (_doc, _response, signed) => {
    for (const v of Array.from(signed.getElementsByTagNameNS(SAML, "AttributeValue"))) v.textContent = login;
  });

/** A second, unsigned assertion naming `login`, before the signed one. */
export const injectSecondAssertion = (r: string, login: string) =>
  rewrite(r, (_doc, response, signed) => {
    response.insertBefore(evilCopy(signed, login, false), signed);
  });

/** The signed assertion hidden in <samlp:Extensions>, an unsigned one naming `login` in its place. */
export const hideSignedInExtensions = (r: string, login: string, sameId: boolean) =>
  rewrite(r, (doc, response, signed) => {
    const evil = evilCopy(signed, login, sameId);
    const extensions = doc.createElementNS(SAMLP, "samlp:Extensions") as unknown as Element;
    response.replaceChild(evil, signed);
    extensions.appendChild(signed);
    response.insertBefore(extensions, evil);
  });

/** The signed assertion nested inside the evil one (XSW inside the Subject). */
export const nestSignedInEvil = (r: string, login: string) =>
  rewrite(r, (_doc, response, signed) => {
    const evil = evilCopy(signed, login, false);
    response.replaceChild(evil, signed);
    evil.getElementsByTagNameNS(SAML, "Subject")[0]!.appendChild(signed);
  });
