// Stock metadata plugin `default_external_api` (COMPATIBILITY.md §12.2).
import type { MetadataPlugin } from "../../src/plugins/types.ts";

export default {
  async getTokenMetadata() {
    return { purpose: "external_api" };
  },
} satisfies MetadataPlugin;
