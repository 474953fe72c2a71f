import type { HoistConfig } from '../../config/schema.js';
import type { BuildSettings, Project } from '../entities/project.js';
import { BUILD_SETTING_KEYS } from './build-settings.js';
import { projectUrl } from './project-url.js';

/** A project as the API shows it; every build setting is present, null when unset. */
export interface ProjectView {
  id: string;
  name: string;
  slug: string;
  url: string;
  visibility: string;
  /** Whether the project has an access password (the password itself is never shown). */
  access_password_set: boolean;
  settings: { [K in keyof BuildSettings]-?: string | null };
  /** Who sees the project's previews: private (behind its gate) or public (noindex). */
  preview_visibility: string;
  created_at: string;
  updated_at: string;
}

/** The API shape of `project`. */
export function projectView(config: HoistConfig, project: Project): ProjectView {
  const settings = Object.fromEntries(
    BUILD_SETTING_KEYS.map((k) => [k, project.settings?.[k] ?? null]),
  ) as ProjectView['settings'];
  return {
    id: project.id,
    name: project.name,
    slug: project.slug,
    url: projectUrl(config, project.slug),
    visibility: project.visibility,
    access_password_set: project.accessPasswordHash != null,
    settings,
    preview_visibility: project.previewVisibility,
    created_at: project.createdAt.toISOString(),
    updated_at: project.updatedAt.toISOString(),
  };
}
