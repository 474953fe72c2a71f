import { DeploymentRecord, PageQuery, ReleaseDetail } from './record-schemas.js';
import { memberOrNull } from './schemas.js';

/** A release's notes: where it went, where it came from, and whether promote can make it live again. */
const notes = {
  target: {
    type: 'string',
    enum: ['production', 'preview'],
    description:
      'Where it was deployed: production, or preview (its own host, url; a promoted preview is production since).',
  },
  source: {
    type: ['string', 'null'],
    enum: ['upload', 'upload_session', 'promote', 'retry', 'deploy_hook', null],
    description:
      'What started the operation that made it live: an authenticated upload, an upload session, a promote, ' +
      "a retry of a record or a deploy hook (then started_by is null: the hook's URL is the credential); null for " +
      'releases older than the field.',
  },
  started_by: memberOrNull(
    'The user who started it; null for an upload session or a deploy hook (its URL is the credential) and older ' +
      'releases.',
  ),
  archive_sha256: { type: 'string', description: 'SHA-256 of the uploaded ZIP it was built from.' },
  promotable: {
    type: 'boolean',
    description:
      "True for a superseded release the deployer still keeps (within the plan's release_retention) and for a " +
      'preview that has not expired: POST .../releases/{releaseID}/promote makes it live without a build. False ' +
      'for the live one, a pruned one, an expired preview, and one that failed.',
  },
} as const;
const noteKeys = Object.keys(notes);

/** A release in the list: its deployment record and its notes. */
export const ReleaseRecord = {
  ...DeploymentRecord,
  required: [...DeploymentRecord.required, ...noteKeys],
  properties: { ...DeploymentRecord.properties, ...notes },
};

/** One release: its version, build, deployment, timings and notes. */
export const ReleaseWithNotes = {
  ...ReleaseDetail,
  required: [...ReleaseDetail.required, ...noteKeys],
  properties: { ...ReleaseDetail.properties, ...notes },
};

/** The releases list's query: a page, and the target. */
export const ReleaseQuery = {
  ...PageQuery,
  properties: {
    ...PageQuery.properties,
    target: {
      type: 'string',
      enum: ['production', 'preview'],
      description: 'Only releases deployed to this target: production, or preview (previews, expired ones included).',
    },
  },
};
