-- AlterTable
ALTER TABLE "ControlJournalEntry" ADD COLUMN     "ignoredFields" TEXT;
