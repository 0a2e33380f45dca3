// Stock metadata plugin `default_internal` (COMPATIBILITY.md §12.2).
import type { MetadataPlugin } from "../../src/plugins/types.ts";

export default {
  async getTokenMetadata() {
    return { purpose: "internal" };
  },
} satisfies MetadataPlugin;
