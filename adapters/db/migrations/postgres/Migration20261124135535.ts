import { Migration } from '@mikro-orm/migrations';

export class Migration20261124135535 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "rate_hits" ("id" uuid not null, "key" varchar(400) not null, "at" timestamptz not null, constraint "rate_hits_pkey" primary key ("id"));`);
    this.addSql(`create index "rate_hits_key_at_index" on "rate_hits" ("key", "at");`);
    this.addSql(`create index "rate_hits_at_index" on "rate_hits" ("at");`);

    this.addSql(`drop table if exists "rate_buckets" cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`create table "rate_buckets" ("key" varchar(400) not null, "window_start" timestamptz(6) not null, "count" int4 not null default 0, constraint "rate_buckets_pkey" primary key ("key"));`);

    this.addSql(`drop table if exists "rate_hits" cascade;`);
  }

}
