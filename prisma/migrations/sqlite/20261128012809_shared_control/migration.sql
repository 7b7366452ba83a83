-- CreateTable
CREATE TABLE "ControlRule" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "input" TEXT NOT NULL,
    "hits" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL,
    "expiresAt" BIGINT
);

-- CreateTable
CREATE TABLE "ControlJournalEntry" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "at" BIGINT NOT NULL,
    "finishedAt" BIGINT NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "operation" TEXT,
    "projectId" TEXT,
    "status" INTEGER NOT NULL,
    "ms" REAL NOT NULL,
    "requestBody" TEXT,
    "responseBody" TEXT,
    "fault" TEXT
);

-- CreateTable
CREATE TABLE "ControlSetting" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL
);

-- CreateTable
CREATE TABLE "ControlProcess" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "version" INTEGER NOT NULL,
    "aliveAt" BIGINT NOT NULL,
    "startedAt" BIGINT NOT NULL
);

-- CreateIndex
CREATE INDEX "ControlRule_kind_id_idx" ON "ControlRule"("kind", "id");

-- CreateIndex
CREATE INDEX "ControlJournalEntry_finishedAt_idx" ON "ControlJournalEntry"("finishedAt");
