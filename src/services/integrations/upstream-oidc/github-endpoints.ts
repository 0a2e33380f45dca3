// GitHub's fixed OAuth 2.0 endpoints and REST API root (the `github` preset has no discovery): github.com's,
// or a GitHub Enterprise Server's under its base URL. Apart from github.ts so that providers.ts can check
// them against the outbound policy at creation without importing the sign-in.
export const GITHUB_BASE_URL = "https://github.com";
/** `read:user` for the profile, `user:email` for `/user/emails` (REST API "Scopes for OAuth apps"). */
export const GITHUB_SCOPES = ["read:user", "user:email"];

export interface GithubEndpoints {
  authorization: string;
  token: string;
  /** The REST API's root: api.github.com, or `/api/v3` on an Enterprise Server. */
  api: string;
}

/** github.com's endpoints, or those of the Enterprise Server at `base` (its own host, `/api/v3`). */
export function githubEndpoints(base: string): GithubEndpoints {
  const root = base.replace(/\/+$/, "");
  return {
    authorization: `${root}/login/oauth/authorize`,
    token: `${root}/login/oauth/access_token`,
    api: root === GITHUB_BASE_URL ? "https://api.github.com" : `${root}/api/v3`,
  };
}
