// The release of this code (semantic versioning, CHANGELOG.md): package.json's version, which
// `tessera --version` prints and the OpenAPI document's `info.version` carries.
import pkg from "../../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
