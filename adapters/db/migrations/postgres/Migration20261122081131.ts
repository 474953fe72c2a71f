import { Migration } from '@mikro-orm/migrations';

export class Migration20261122081131 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "access_codes" ("id" uuid not null, "project_id" uuid not null, "grant_id" uuid not null, "code_hash" varchar(255) not null, "attempts" int not null default 0, "expires_at" timestamptz not null, "created_at" timestamptz not null, constraint "access_codes_pkey" primary key ("id"));`);
    this.addSql(`create index "access_codes_project_id_grant_id_index" on "access_codes" ("project_id", "grant_id");`);

    this.addSql(`create table "access_grants" ("id" uuid not null, "project_id" uuid not null, "email" varchar(320) not null, "created_at" timestamptz not null, constraint "access_grants_pkey" primary key ("id"));`);
    this.addSql(`create index "access_grants_project_id_index" on "access_grants" ("project_id");`);
    this.addSql(`alter table "access_grants" add constraint "access_grants_project_id_email_unique" unique ("project_id", "email");`);

    this.addSql(`create table "domains" ("id" uuid not null, "account_id" uuid not null, "project_id" uuid not null, "hostname" varchar(253) not null, "status" varchar(16) not null default 'pending', "token" varchar(64) not null, "message" text null, "failures" int not null default 0, "verified_at" timestamptz null, "activated_at" timestamptz null, "last_checked_at" timestamptz null, "next_check_at" timestamptz not null, "claimed_until" timestamptz null, "claimed_by" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "domains_pkey" primary key ("id"));`);
    this.addSql(`alter table "domains" add constraint "domains_hostname_unique" unique ("hostname");`);
    this.addSql(`create index "domains_project_id_index" on "domains" ("project_id");`);
    this.addSql(`create index "domains_account_id_index" on "domains" ("account_id");`);
    this.addSql(`create index "domains_next_check_at_index" on "domains" ("next_check_at");`);

    this.addSql(`alter table "projects" add column "access_password_hash" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "access_codes" cascade;`);

    this.addSql(`drop table if exists "access_grants" cascade;`);

    this.addSql(`drop table if exists "domains" cascade;`);

    this.addSql(`alter table "projects" drop column "access_password_hash";`);
  }

}
