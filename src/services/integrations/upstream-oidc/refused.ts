// Why an upstream sign-in stops, in words the user may read (shown on the page; never a secret).
export class UpstreamSignInRefused extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = "UpstreamSignInRefused";
  }
}
