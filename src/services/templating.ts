// nunjucks (Jinja templates: the emails' and the hosted pages'), loaded at the first render: a
// service that sends no email and shows no login page never loads it (~25 modules, ~1 MiB resident,
// 10–25 ms of a start's CPU). A literal require, so that the single-file build still carries it.
import type Nunjucks from "nunjucks";

/** The module (require caches it after the first call). */
export const nunjucks = () => require("nunjucks") as typeof Nunjucks;

export type Template = Nunjucks.Template;
export type Environment = Nunjucks.Environment;
