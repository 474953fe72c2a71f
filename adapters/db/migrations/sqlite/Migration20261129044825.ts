import { Migration } from '@mikro-orm/migrations';

export class Migration20261129044825 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`operations\` add column \`held_since\` datetime null;`);
  }

}
