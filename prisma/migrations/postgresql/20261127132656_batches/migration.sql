-- CreateTable
CREATE TABLE "Batch" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "inputFileId" TEXT NOT NULL,
    "fileSizeBytes" BIGINT NOT NULL,
    "modelId" TEXT,
    "completionWindow" TEXT NOT NULL,
    "priority" INTEGER,
    "status" TEXT NOT NULL,
    "jobDeadline" BIGINT NOT NULL,
    "totalLines" INTEGER NOT NULL DEFAULT 0,
    "linesDone" INTEGER NOT NULL DEFAULT 0,
    "inputOffset" BIGINT NOT NULL DEFAULT 0,
    "inputLine" INTEGER NOT NULL DEFAULT 0,
    "outputBytes" BIGINT NOT NULL DEFAULT 0,
    "errorBytes" BIGINT NOT NULL DEFAULT 0,
    "outputLines" INTEGER NOT NULL DEFAULT 0,
    "errorLines" INTEGER NOT NULL DEFAULT 0,
    "outputFileId" TEXT NOT NULL,
    "errorFileId" TEXT NOT NULL,
    "filesRecorded" BOOLEAN NOT NULL DEFAULT false,
    "duplicates" TEXT NOT NULL DEFAULT '[]',
    "error" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,
    "completedAt" BIGINT,

    CONSTRAINT "Batch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Batch_projectId_createdAt_idx" ON "Batch"("projectId", "createdAt");
