// RFC 8628 §3.4: the device polls with its device code until the user approved it on the
// verification page (web/device.ts), denied it, or it expired.
import { DEVICE_GRANT, pollDeviceCode } from "../device.ts";
import type { Grant } from "./grant.ts";

export const deviceCodeGrant: Grant<typeof DEVICE_GRANT> = {
  type: DEVICE_GRANT,
  parameters: ["device_code"],
  handle: (app, client, form, { issuer }) => pollDeviceCode(app, client, form, issuer),
};
