import type { User } from '../entities/user.js';
import { HoistError, invalid } from '../errors.js';

/** What a member may do: an owner also manages members and the account; a member works on every project. */
export const ROLES = ['owner', 'member'] as const;
export type Role = (typeof ROLES)[number];

/** Throws invalid_request unless `role` is owner or member; absent means member. */
export function checkRole(role: unknown): Role {
  if (role === undefined) return 'member';
  if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role))
    throw invalid(`role must be one of ${ROLES.join(', ')}`, { field: 'role' });
  return role as Role;
}

/** Throws forbidden unless `user` (the acting one, null when gone) is an owner of their account. */
export function assertOwner<U extends Pick<User, 'role'>>(user: U | null): asserts user is U {
  if (user?.role !== 'owner')
    throw new HoistError('forbidden', "Only an owner of the account may do this; ask one of the account's owners", {
      role: user?.role ?? null,
    });
}
