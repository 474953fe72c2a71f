import { Migration } from '@mikro-orm/migrations';

export class Migration20261129020611 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "project_usage" ("project_id" uuid not null, "hour" int not null, "requests" int not null default 0, "bytes" bigint not null default 0, "status2xx" int not null default 0, "status3xx" int not null default 0, "status4xx" int not null default 0, "status5xx" int not null default 0, constraint "project_usage_pkey" primary key ("project_id", "hour"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "project_usage" cascade;`);
  }

}
