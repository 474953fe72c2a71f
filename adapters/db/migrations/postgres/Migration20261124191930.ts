import { Migration } from '@mikro-orm/migrations';

export class Migration20261124191930 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "build_log_chunks" ("id" uuid not null, "operation_id" uuid not null, "build_id" uuid not null, "from_line" int not null, "to_line" int not null, "lines" jsonb not null, "created_at" timestamptz not null, constraint "build_log_chunks_pkey" primary key ("id"));`);
    this.addSql(`create index "build_log_chunks_operation_id_to_line_index" on "build_log_chunks" ("operation_id", "to_line");`);
    this.addSql(`create index "build_log_chunks_build_id_to_line_index" on "build_log_chunks" ("build_id", "to_line");`);
    this.addSql(`alter table "build_log_chunks" add constraint "build_log_chunks_operation_id_from_line_unique" unique ("operation_id", "from_line");`);

    this.addSql(`create index "operations_account_id_created_at_id_index" on "operations" ("account_id", "created_at", "id");`);
    this.addSql(`create index "operations_project_id_created_at_id_index" on "operations" ("project_id", "created_at", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "build_log_chunks" cascade;`);

    this.addSql(`drop index "operations_account_id_created_at_id_index";`);
    this.addSql(`drop index "operations_project_id_created_at_id_index";`);
  }

}
