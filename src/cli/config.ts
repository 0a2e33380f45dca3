// `tessera config check [--config F]`: validates the configuration as the service would at start
// (unknown keys included) and prints the effective configuration, secrets masked as GET /0.1/config does.
import { defineCommand } from "citty";
import { configArg } from "./local.ts";
import { CliFailure, EXIT, printJson } from "./output.ts";

const checkCommand = defineCommand({
  meta: {
    name: "check",
    description: "Validate the configuration and print the effective one (secrets masked); exit 2 when invalid",
  },
  args: { ...configArg, json: { type: "boolean", description: "JSON output", default: false } },
  async run({ args }) {
    const [{ ConfigError, loadConfigWithSource, maskSecrets }, { stringify }] = await Promise.all([
      import("../config/config.ts"),
      import("yaml"),
    ]);
    let loaded;
    try {
      loaded = loadConfigWithSource(args.config ? ["--config", args.config] : []);
    } catch (e) {
      if (e instanceof ConfigError) throw new CliFailure(`tessera: ${e.message}`, EXIT.usage);
      throw e;
    }
    const shown = maskSecrets(loaded.config);
    if (args.json) return printJson(shown);
    const source = loaded.path ? `${loaded.path}, defaults and environment` : "defaults and environment (no file)";
    console.log(`# configuration valid; effective values from ${source}; secrets masked\n${stringify(shown)}`);
  },
});

export const configCommand = defineCommand({
  meta: { name: "config", description: "Check the configuration" },
  subCommands: { check: checkCommand },
});
