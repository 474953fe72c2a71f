import { Migration } from '@mikro-orm/migrations';

export class Migration20261124140415 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "domains" drop constraint "domains_hostname_unique";`);
    this.addSql(`drop index "domains_project_id_index";`);

    this.addSql(`alter table "domains" add column "owned_hostname" varchar(253) null;`);
    // Domains that were verified hold their hostname (it was unique until now).
    this.addSql(`update "domains" set "owned_hostname" = "hostname" where "status" in ('verified', 'active', 'misconfigured');`);
    this.addSql(`alter table "domains" add constraint "domains_owned_hostname_unique" unique ("owned_hostname");`);
    this.addSql(`create index "domains_hostname_index" on "domains" ("hostname");`);
    this.addSql(`alter table "domains" add constraint "domains_project_id_hostname_unique" unique ("project_id", "hostname");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "domains" drop constraint "domains_owned_hostname_unique";`);
    this.addSql(`drop index "domains_hostname_index";`);
    this.addSql(`alter table "domains" drop constraint "domains_project_id_hostname_unique";`);
    this.addSql(`alter table "domains" drop column "owned_hostname";`);

    this.addSql(`alter table "domains" add constraint "domains_hostname_unique" unique ("hostname");`);
    this.addSql(`create index "domains_project_id_index" on "domains" ("project_id");`);
  }

}
