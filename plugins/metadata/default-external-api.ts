// Stock metadata plugin `default_external_api` (wazo-auth's metadata plugins).
import type { MetadataPlugin } from "../../src/plugins/sdk.ts";

export default {
  async getTokenMetadata() {
    return { purpose: "external_api" };
  },
} satisfies MetadataPlugin;
