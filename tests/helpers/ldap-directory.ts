// The directory the LDAP tests log in against: ACME's people (one without an email, two sharing a
// login in different branches, one whose login needs DN escaping) and a service account.
import { BASE_DN } from "./slapd.ts";

const person = (dn: string, uid: string, password: string, extra: string[] = []) =>
  [
    `dn: ${dn}`,
    "objectClass: inetOrgPerson",
    `uid: ${uid}`,
    `cn: ${uid}`,
    `sn: ${uid}`,
    `userPassword: ${password}`,
    ...extra,
  ].join("\n");

export const PEOPLE_DN = `ou=people,${BASE_DN}`;
export const SERVICE_DN = `cn=reader,ou=services,${BASE_DN}`;
export const SERVICE_PASSWORD = "reader-secret";

export const ACME_LDIF =
  [
    `dn: ou=people,${BASE_DN}\nobjectClass: organizationalUnit\nou: people`,
    `dn: ou=staff,${BASE_DN}\nobjectClass: organizationalUnit\nou: staff`,
    `dn: ou=services,${BASE_DN}\nobjectClass: organizationalUnit\nou: services`,
    `dn: ${SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: reader\nuserPassword: ${SERVICE_PASSWORD}`,
    person(`uid=alice,${PEOPLE_DN}`, "alice", "alice-ldap", ["mail: Alice@ACME.example.com", "employeeNumber: 1001"]),
    person(`uid=bob,${PEOPLE_DN}`, "bob", "bob-ldap", ["mail: bob@acme.example.com"]),
    person(`uid=nomail,${PEOPLE_DN}`, "nomail", "nomail-ldap"),
    person(`uid=twin,${PEOPLE_DN}`, "twin", "twin-ldap", ["mail: twin1@acme.example.com"]),
    person(`uid=twin,ou=staff,${BASE_DN}`, "twin", "twin-ldap", ["mail: twin2@acme.example.com"]),
    person(`uid=smith\\, john,${PEOPLE_DN}`, "smith, john", "smith-ldap", ["mail: john.smith@acme.example.com"]),
    person(`uid=stranger,${PEOPLE_DN}`, "stranger", "stranger-ldap", ["mail: stranger@acme.example.com"]),
  ].join("\n\n") + "\n";
