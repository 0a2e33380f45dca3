// SCIM's errors (RFC 7644 §3.12): a status, an optional `scimType` and a detail. A ScimError is an
// ApiError, so a door other than SCIM's still answers it in its own form.
import { ApiError } from "../../domain/errors.ts";

export type ScimType =
  | "invalidFilter"
  | "tooMany"
  | "uniqueness"
  | "mutability"
  | "invalidSyntax"
  | "invalidPath"
  | "noTarget"
  | "invalidValue"
  | "invalidVers"
  | "sensitive";

export class ScimError extends ApiError {
  constructor(
    status: number,
    readonly scimType: ScimType | null,
    detail: string,
  ) {
    super(status, scimType ?? `scim-${status}`, detail, "scim");
  }
}

export const invalidFilter = (detail: string) => new ScimError(400, "invalidFilter", detail);
export const invalidPath = (detail: string) => new ScimError(400, "invalidPath", detail);
export const invalidValue = (detail: string) => new ScimError(400, "invalidValue", detail);
export const invalidSyntax = (detail: string) => new ScimError(400, "invalidSyntax", detail);
export const noTarget = (detail: string) => new ScimError(400, "noTarget", detail);
export const mutability = (detail: string) => new ScimError(400, "mutability", detail);
export const uniqueness = (detail: string) => new ScimError(409, "uniqueness", detail);
export const scimNotFound = (kind: string, id: string) => new ScimError(404, null, `${kind} ${id} not found`);
/** §3.14: the resource changed since the version the client names in If-Match. */
export const preconditionFailed = () =>
  new ScimError(412, null, "The resource changed since the version named in If-Match");
