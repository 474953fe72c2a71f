import { Migration } from '@mikro-orm/migrations';

export class Migration20261129021835 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`users\` add column \`invited_at\` datetime null;`);
  }

}
