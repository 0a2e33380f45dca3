// The list parameters (wazo-auth's list parameters: order, direction, limit, offset, search and
// filters) of resources listed under several paths: users (also a group's members), policies (also a
// group's and a user's), groups (also a user's). Declared once so every path lists alike.
import { listQuery } from "../domain/collection.ts";
import type { GroupFilter } from "../services/identity/groups.ts";
import type { PolicyFilter } from "../services/identity/policies.ts";
import type { UserFilter } from "../services/identity/users.ts";

export const USER_FILTERS: UserFilter[] = [
  "uuid",
  "username",
  "firstname",
  "lastname",
  "purpose",
  "email_address",
  "group_uuid",
  "policy_uuid",
  "policy_slug",
  "has_policy_uuid",
  "has_policy_slug",
];
export const userList = listQuery<UserFilter>({
  order: ["username", "firstname", "lastname"],
  defaultOrder: "username",
  filters: USER_FILTERS,
});
export const POLICY_FILTERS: PolicyFilter[] = [
  "uuid",
  "name",
  "slug",
  "user_uuid",
  "group_uuid",
  "tenant_uuid",
  "read_only",
];
export const policyList = listQuery<PolicyFilter>({
  order: ["name", "slug", "description", "uuid"],
  defaultOrder: "name",
  filters: POLICY_FILTERS,
});
export const groupList = listQuery<GroupFilter>({
  order: ["name", "uuid"],
  defaultOrder: "name",
  filters: ["uuid", "name", "slug", "user_uuid", "read_only", "policy_uuid", "policy_slug"],
});
export const groupUserList = listQuery({ order: ["username"], defaultOrder: "username", filters: USER_FILTERS });
