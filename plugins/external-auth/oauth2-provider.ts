// What the google and microsoft plugins share (wazo-auth's external-auth plugins): POST starts an OAuth2
// authorization (201 with `authorization_url`), the provider redirects back to Tessera, the code is
// exchanged for tokens; GET returns the access token, refreshing it when it expires within 30 s.
import { z } from "zod";
import {
  type ExternalAuthPlugin,
  type ExternalAuthServices,
  type ExternalRequest,
  InvalidData,
  NotFound,
  ServiceUnavailable,
  zodDetails,
} from "../../src/plugins/sdk.ts";

export interface ProviderConfig {
  authorization_base_url: string;
  token_url: string;
  scope: string[];
  /** Extra query parameters of the authorization URL (Google: access_type=offline, prompt=consent). */
  authorization_params?: Record<string, string>;
}

const postBody = z.object({ scope: z.array(z.string().min(1).max(512)).optional() });
const REFRESH_MARGIN_S = 30;

export abstract class OAuth2ProviderPlugin implements ExternalAuthPlugin {
  protected services!: ExternalAuthServices;
  pluginInfo: Record<string, unknown> = {};
  safeView = z.object({ scope: z.array(z.string()).optional() });

  constructor(protected readonly config: ProviderConfig) {}

  load(services: ExternalAuthServices): void {
    this.services = services;
  }

  private async clientOf(tenantUuid: string): Promise<{ client_id: string; client_secret: string }> {
    const config = await this.services.getConfig(tenantUuid);
    if (!config?.client_id || !config.client_secret)
      throw new NotFound(
        this.services.authType,
        tenantUuid,
        `No "${this.services.authType}" configuration for this tenant`,
      );
    return { client_id: String(config.client_id), client_secret: String(config.client_secret) };
  }

  private async tokenRequest(params: Record<string, string>): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(this.config.token_url, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
        body: new URLSearchParams(params),
      });
    } catch (e) {
      throw new ServiceUnavailable(
        this.services.authType,
        `The ${this.services.authType} token service is unreachable`,
      );
    }
    if (!res.ok)
      throw new ServiceUnavailable(
        this.services.authType,
        `The ${this.services.authType} token service refused the request (${res.status})`,
      );
    return (await res.json()) as Record<string, unknown>;
  }

  private stored(tokens: Record<string, unknown>, previous: Record<string, unknown> | null, scope: string[]) {
    const expiresIn = Number(tokens.expires_in ?? 3600);
    return {
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token ?? previous?.refresh_token ?? null,
      token_expiration: Math.floor(Date.now() / 1000) + expiresIn,
      scope,
    };
  }

  /** Runs when the provider redirects back: exchange the code, store the tokens. */
  oauth2Callback = async (
    userUuid: string,
    message: Record<string, string>,
    tenantUuid?: unknown,
    scope?: unknown,
  ): Promise<void> => {
    const client = await this.clientOf(String(tenantUuid));
    const tokens = await this.tokenRequest({
      grant_type: "authorization_code",
      code: message.code ?? "",
      redirect_uri: this.services.buildOAuth2RedirectUrl(),
      ...client,
    });
    await this.services.updateData(userUuid, this.stored(tokens, null, (scope as string[]) ?? this.config.scope), true);
  };

  routes = {
    post: async (req: ExternalRequest) => {
      const body = postBody.safeParse(req.body ?? {});
      if (!body.success) throw new InvalidData("users", zodDetails(body.error, postBody, req.body));
      const client = await this.clientOf(req.tenantUuid);
      const scope = body.data.scope ?? this.config.scope;
      const state = crypto.randomUUID().replaceAll("-", "");
      await this.services.registerOAuth2Callback(
        req.userUuid,
        state,
        (tenant: unknown, sc: unknown, message: unknown) =>
          this.oauth2Callback(req.userUuid, message as Record<string, string>, tenant, sc),
        req.tenantUuid,
        scope,
      );
      const url = new URL(this.config.authorization_base_url);
      const params = {
        client_id: client.client_id,
        redirect_uri: this.services.buildOAuth2RedirectUrl(),
        response_type: "code",
        scope: scope.join(" "),
        state,
        ...(this.config.authorization_params ?? {}),
      };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      return { status: 201, body: { authorization_url: url.toString(), state } };
    },
    get: async (req: ExternalRequest) => {
      let data = await this.services.getData(req.userUuid);
      if (!data?.access_token)
        throw new NotFound(this.services.authType, req.userUuid, `No "${this.services.authType}" data for this user`);
      const expiration = data.token_expiration as number | null;
      if (!expiration || expiration - REFRESH_MARGIN_S < Date.now() / 1000) {
        const client = await this.clientOf(req.tenantUuid);
        const tokens = await this.tokenRequest({
          grant_type: "refresh_token",
          refresh_token: String(data.refresh_token ?? ""),
          ...client,
        });
        data = this.stored(tokens, data, (data.scope as string[]) ?? this.config.scope);
        await this.services.updateData(req.userUuid, data);
      }
      return {
        status: 200,
        body: { access_token: data.access_token, token_expiration: data.token_expiration, scope: data.scope },
      };
    },
    delete: async (req: ExternalRequest) => {
      await this.services.deleteData(req.userUuid);
      return { status: 204 };
    },
  };
}
