// `npm install` runs this (postinstall): the embedded database's initdb'd template, so that a first
// start on an empty data directory copies it instead of running initdb (src/db/pglite-template.ts).
import { ensureTemplate, templateDir } from "../src/db/pglite-template.ts";

const started = performance.now();
const dir = await ensureTemplate();
if (dir)
  console.log(`tessera: embedded database template ready in ${dir} (${Math.round(performance.now() - started)} ms)`);
else
  console.log(
    `tessera: could not write the embedded database template at ${templateDir()}; the first start will run initdb itself`,
  );
