-- CreateTable
CREATE TABLE "ControlRule" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "input" TEXT NOT NULL,
    "hits" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL,
    "expiresAt" BIGINT,

    CONSTRAINT "ControlRule_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ControlJournalEntry" (
    "id" SERIAL NOT NULL,
    "at" BIGINT NOT NULL,
    "finishedAt" BIGINT NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "operation" TEXT,
    "projectId" TEXT,
    "status" INTEGER NOT NULL,
    "ms" DOUBLE PRECISION NOT NULL,
    "requestBody" TEXT,
    "responseBody" TEXT,
    "fault" TEXT,

    CONSTRAINT "ControlJournalEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ControlSetting" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "ControlSetting_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "ControlProcess" (
    "id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "aliveAt" BIGINT NOT NULL,
    "startedAt" BIGINT NOT NULL,

    CONSTRAINT "ControlProcess_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ControlRule_kind_id_idx" ON "ControlRule"("kind", "id");

-- CreateIndex
CREATE INDEX "ControlJournalEntry_finishedAt_idx" ON "ControlJournalEntry"("finishedAt");
