import { Migration } from '@mikro-orm/migrations';

export class Migration20261124201530 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "deployments" add column "pruned_at" timestamptz null;`);
    // Superseded releases had their files removed 30 s after the switch until retention kept them.
    this.addSql(`update "deployments" set "pruned_at" = "ended_at" where "status" = 'superseded';`);

    this.addSql(`alter table "operations" add column "source" varchar(16) null, add column "started_by" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "deployments" drop column "pruned_at";`);

    this.addSql(`alter table "operations" drop column "source", drop column "started_by";`);
  }

}
