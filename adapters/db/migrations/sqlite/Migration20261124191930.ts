import { Migration } from '@mikro-orm/migrations';

export class Migration20261124191930 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`build_log_chunks\` (\`id\` text not null, \`operation_id\` text not null, \`build_id\` text not null, \`from_line\` integer not null, \`to_line\` integer not null, \`lines\` json not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`build_log_chunks_operation_id_to_line_index\` on \`build_log_chunks\` (\`operation_id\`, \`to_line\`);`);
    this.addSql(`create index \`build_log_chunks_build_id_to_line_index\` on \`build_log_chunks\` (\`build_id\`, \`to_line\`);`);
    this.addSql(`create unique index \`build_log_chunks_operation_id_from_line_unique\` on \`build_log_chunks\` (\`operation_id\`, \`from_line\`);`);

    this.addSql(`create index \`operations_account_id_created_at_id_index\` on \`operations\` (\`account_id\`, \`created_at\`, \`id\`);`);
    this.addSql(`create index \`operations_project_id_created_at_id_index\` on \`operations\` (\`project_id\`, \`created_at\`, \`id\`);`);
  }

}
