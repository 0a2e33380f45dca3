// The Reflect metadata polyfill, which @simplewebauthn/server's @peculiar/x509 (tsyringe) checks for
// when it loads. Its own module, imported before @simplewebauthn/server (webauthn.ts): bundled into
// the single executable (scripts/build.ts), a CommonJS package imported for its side effect runs
// where the importing ES module's body runs — after that module's other imports — but this module's
// body runs before the next import's.
import "reflect-metadata";
