// Stock metadata plugin `default_internal` (wazo-auth's metadata plugins).
import type { MetadataPlugin } from "../../src/plugins/sdk.ts";

export default {
  async getTokenMetadata() {
    return { purpose: "internal" };
  },
} satisfies MetadataPlugin;
