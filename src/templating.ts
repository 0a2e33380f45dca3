// nunjucks (Jinja templates: the emails' and the hosted pages'), loaded at the first render: a
// service that sends no email and shows no login page never loads it (~25 modules, ~1 MiB resident,
// 10–25 ms of a start's CPU). A literal require, so that the single-file build still carries it.
import type Nunjucks from "nunjucks";

let loaded: typeof Nunjucks | null = null;

export function nunjucks(): typeof Nunjucks {
  loaded ??= require("nunjucks") as typeof Nunjucks;
  return loaded;
}

export type Template = Nunjucks.Template;
export type Environment = Nunjucks.Environment;
