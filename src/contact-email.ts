// The shape a support address (CONTACT_EMAIL) must have. This file has no imports so that
// deploy-check can use `mailtoAddress` too: it refuses a deployment whose address the pages
// would not link.
const EMAIL_SHAPE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * The address to put in a mailto: link, or undefined: an empty or malformed one made an empty link,
 * and a `?` would carry its own headers (`?cc=…&body=…`) into the buyer's mail.
 */
export function mailtoAddress(email: string | undefined): string | undefined {
  return email && EMAIL_SHAPE.test(email) && !email.includes("?") ? email : undefined;
}
