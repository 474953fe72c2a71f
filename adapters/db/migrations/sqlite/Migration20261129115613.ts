import { Migration } from '@mikro-orm/migrations';

export class Migration20261129115613 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index \`builds_account_id_index\` on \`builds\` (\`account_id\`);`);

    this.addSql(`create index \`versions_account_id_index\` on \`versions\` (\`account_id\`);`);
  }

}
