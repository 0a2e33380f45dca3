// A real SAML 2.0 identity provider for the tests, built on samlify's IdP side with its own key
// pair (generated at test time): an HTTP server that takes the SP's signed AuthnRequest
// (HTTP-Redirect binding, signature checked against the SP metadata), shows a login form, checks
// the password and answers the browser an auto-submitting form carrying the signed SAMLResponse
// (HTTP-POST binding). It also answers logout requests with a signed LogoutResponse. The
// `next` options bend the next response the way a broken or hostile IdP would.
import * as samlify from "samlify";
import { generateSelfSigned, type SpKeyPair } from "../../src/services/integrations/saml/sp-key.ts";

samlify.setSchemaValidator({ validate: async () => "skipped (test IdP)" });

const REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
const NAME_CLAIM = "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name";

export interface ResponseOptions {
  /** Which element the IdP signs (default: the assertion). */
  sign?: "assertion" | "response" | "both" | "none";
  /** Sign with this key pair instead of the metadata's (an impostor). */
  signWith?: SpKeyPair;
  audience?: string;
  destination?: string;
  recipient?: string;
  inResponseTo?: string;
  /** Seconds from now (negative = in the past). */
  notBeforeIn?: number;
  notOnOrAfterIn?: number;
  /** Attribute name carrying the login (default: the Entra ID / ADFS name claim); null = none. */
  loginAttribute?: string | null;
}

export interface AcsPost {
  action: string;
  SAMLResponse: string;
  RelayState: string;
}

export interface TestIdp {
  url: string;
  entityId: string;
  keys: SpKeyPair;
  /** The IdP metadata XML an administrator uploads to Tessera. */
  metadata(): string;
  /** Tessera's SP metadata for the tenant using this IdP (GET /backends/saml/sp_metadata). */
  spMetadata: string;
  /** Options for the next response only. */
  next: ResponseOptions;
  /** Users the IdP knows: username → {password, login value sent in the name attribute}. */
  users: Map<string, { password: string; login: string }>;
  /** Follows `location` like a browser: the login page, then the credentials; returns the form to post to the ACS. */
  browserLogin(location: string, username: string, password: string): Promise<AcsPost>;
  /** Follows a logout `location`: returns the SLS URL (with the signed LogoutResponse) the IdP redirects to. */
  browserLogout(location: string): Promise<string>;
  /** Replaces the IdP's signing key (certificate rotation). */
  rotateKey(): Promise<void>;
  stop(): Promise<void>;
}

/** samlify's view of Tessera as a service provider, from the SP metadata Tessera serves. */
function serviceProvider(spMetadataXml: string, opts: ResponseOptions): samlify.ServiceProviderInstance {
  const sign = opts.sign ?? "assertion";
  const wantAssertions = sign === "assertion" || sign === "both";
  const metadata = spMetadataXml.replace(
    /WantAssertionsSigned="(true|false)"/,
    `WantAssertionsSigned="${wantAssertions}"`,
  );
  return samlify.ServiceProvider({
    metadata,
    wantMessageSigned: sign === "response" || sign === "both",
    wantLogoutResponseSigned: true,
  });
}

export async function startTestIdp(name: string): Promise<TestIdp> {
  let keys = await generateSelfSigned(`${name} test IdP`);
  const pending = new Map<string, { requestId: string; relayState: string }>();
  let server: ReturnType<typeof Bun.serve>;
  const entityId = `https://${name}.idp.test/metadata`;
  const idpFor = (k: SpKeyPair) =>
    samlify.IdentityProvider({
      entityID: entityId,
      signingCert: k.certificate,
      privateKey: k.privateKey,
      wantAuthnRequestsSigned: true,
      nameIDFormat: ["urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"],
      singleSignOnService: [{ Binding: REDIRECT, Location: `${base()}/sso` }],
      singleLogoutService: [{ Binding: REDIRECT, Location: `${base()}/slo` }],
    });
  const base = () => `http://127.0.0.1:${server.port}`;
  const idp: TestIdp = {
    url: "",
    entityId,
    get keys() {
      return keys;
    },
    metadata: () => idpFor(keys).getMetadata(),
    spMetadata: "",
    next: {},
    users: new Map(),
    async browserLogin(location, username, password) {
      const page = await fetch(location);
      const html = await page.text();
      if (page.status !== 200) throw new Error(`IdP refused the AuthnRequest: ${page.status} ${html}`);
      const requestKey = /name="request" value="([^"]+)"/.exec(html)?.[1];
      const res = await fetch(`${base()}/login`, {
        method: "POST",
        body: new URLSearchParams({ request: requestKey!, username, password }),
      });
      const form = await res.text();
      if (res.status !== 200) throw new Error(`IdP login failed: ${res.status} ${form}`);
      const field = (n: string) => new RegExp(`name="${n}" value="([^"]*)"`).exec(form)?.[1] ?? "";
      return {
        action: /action="([^"]+)"/.exec(form)![1]!,
        SAMLResponse: field("SAMLResponse"),
        RelayState: field("RelayState"),
      };
    },
    async browserLogout(location) {
      const res = await fetch(location, { redirect: "manual" });
      if (res.status !== 302) throw new Error(`IdP refused the LogoutRequest: ${res.status} ${await res.text()}`);
      return res.headers.get("Location")!;
    },
    async rotateKey() {
      keys = await generateSelfSigned(`${name} test IdP (rotated)`);
    },
    stop: async () => server.stop(true),
  };

  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const sp = serviceProvider(idp.spMetadata, {});
      if (url.pathname === "/sso") {
        // samlify checks the SP's signature over the raw query, as sent.
        const octetString = url.search
          .slice(1)
          .split("&")
          .filter((p) => !p.startsWith("Signature="))
          .join("&");
        try {
          const parsed = await idpFor(keys).parseLoginRequest(sp, "redirect", {
            query: Object.fromEntries(url.searchParams),
            octetString,
          });
          const key = crypto.randomUUID();
          pending.set(key, {
            requestId: String(parsed.extract.request?.id),
            relayState: url.searchParams.get("RelayState") ?? "",
          });
          return html(
            `<form method="post" action="/login"><input type="hidden" name="request" value="${key}"><input name="username"><input name="password" type="password"></form>`,
          );
        } catch (e) {
          return new Response(`bad AuthnRequest: ${(e as Error).message ?? e}`, { status: 400 });
        }
      }
      if (url.pathname === "/login" && req.method === "POST") {
        const form = await req.formData();
        const request = pending.get(String(form.get("request")));
        const user = idp.users.get(String(form.get("username")));
        if (!request || !user || user.password !== form.get("password"))
          return new Response("wrong credentials", { status: 401 });
        pending.delete(String(form.get("request")));
        const opts = idp.next;
        idp.next = {};
        const { context, entityEndpoint } = (await signedResponse(
          idpFor(opts.signWith ?? keys),
          serviceProvider(idp.spMetadata, opts),
          request,
          user.login,
          opts,
        )) as { context: string; entityEndpoint: string };
        return html(
          `<form method="post" action="${entityEndpoint}"><input type="hidden" name="SAMLResponse" value="${context}"><input type="hidden" name="RelayState" value="${request.relayState}"></form>`,
        );
      }
      if (url.pathname === "/slo") {
        const octetString = url.search
          .slice(1)
          .split("&")
          .filter((p) => !p.startsWith("Signature="))
          .join("&");
        try {
          const parsed = await idpFor(keys).parseLogoutRequest(sp, "redirect", {
            query: Object.fromEntries(url.searchParams),
            octetString,
          });
          const out = idpFor(keys).createLogoutResponse(
            sp,
            parsed as never,
            "redirect",
            url.searchParams.get("RelayState") ?? "",
          );
          return new Response(null, { status: 302, headers: { Location: out.context } });
        } catch (e) {
          return new Response(`bad LogoutRequest: ${(e as Error).message ?? e}`, { status: 400 });
        }
      }
      return new Response("not found", { status: 404 });
    },
  });
  idp.url = base();
  return idp;
}

function html(body: string): Response {
  return new Response(`<!doctype html><html><body onload="document.forms[0].submit()">${body}</body></html>`, {
    headers: { "Content-Type": "text/html" },
  });
}

const xmlEscape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

async function signedResponse(
  idp: samlify.IdentityProviderInstance,
  sp: samlify.ServiceProviderInstance,
  request: { requestId: string },
  login: string,
  opts: ResponseOptions,
) {
  const now = Date.now();
  const iso = (s: number) => new Date(now + s * 1000).toISOString();
  const acs = sp.entityMeta.getAssertionConsumerService("post") as string;
  const attribute = opts.loginAttribute === undefined ? NAME_CLAIM : opts.loginAttribute;
  const attributes = attribute
    ? `<saml:AttributeStatement><saml:Attribute Name="${xmlEscape(attribute)}"><saml:AttributeValue xsi:type="xs:string">${xmlEscape(login)}</saml:AttributeValue></saml:Attribute></saml:AttributeStatement>`
    : "";
  const values = {
    ID: `_${crypto.randomUUID()}`,
    AssertionID: `_${crypto.randomUUID()}`,
    Destination: opts.destination ?? acs,
    Audience: opts.audience ?? sp.entityMeta.getEntityID(),
    SubjectRecipient: opts.recipient ?? acs,
    Issuer: idp.entityMeta.getEntityID(),
    IssueInstant: iso(0),
    StatusCode: "urn:oasis:names:tc:SAML:2.0:status:Success",
    ConditionsNotBefore: iso(opts.notBeforeIn ?? -5),
    ConditionsNotOnOrAfter: iso(opts.notOnOrAfterIn ?? 300),
    SubjectConfirmationDataNotOnOrAfter: iso(opts.notOnOrAfterIn ?? 300),
    NameIDFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
    NameID: `${login}@idp`,
    InResponseTo: opts.inResponseTo ?? request.requestId,
    AuthnStatement: "",
    AttributeStatement: "",
  };
  const statements = `<saml:AuthnStatement AuthnInstant="${iso(0)}" SessionIndex="_session-${crypto.randomUUID()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>${attributes}`;
  const render = (template: string) =>
    samlify.SamlLib.replaceTagsByValue(template, values).replace("</saml:Assertion>", `${statements}</saml:Assertion>`);
  if (opts.sign === "none") {
    const xml = render(samlify.SamlLib.defaultLoginResponseTemplate.context);
    return { context: Buffer.from(xml).toString("base64"), entityEndpoint: acs };
  }
  return idp.createLoginResponse(
    sp,
    { extract: { request: { id: request.requestId } } },
    "post",
    {},
    (template: string) => ({ id: values.ID, context: render(template) }),
  );
}
