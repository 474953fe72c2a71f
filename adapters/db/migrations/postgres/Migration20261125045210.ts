import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045210 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "builds" add column "artifact_removed_at" timestamptz null, add column "log_removed_at" timestamptz null;`);
    this.addSql(`create index "builds_artifact_key_index" on "builds" ("artifact_key");`);

    this.addSql(`alter table "versions" add column "archive_removed_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "builds_artifact_key_index";`);
    this.addSql(`alter table "builds" drop column "artifact_removed_at", drop column "log_removed_at";`);

    this.addSql(`alter table "versions" drop column "archive_removed_at";`);
  }

}
