-- CreateTable
CREATE TABLE "TciSession" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "startedAt" BIGINT NOT NULL,
    "expiresAt" BIGINT NOT NULL,
    "lastExecuteAt" BIGINT NOT NULL,
    "executeCount" INTEGER NOT NULL
);

-- CreateTable
CREATE TABLE "TciCell" (
    "sessionId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "files" TEXT NOT NULL,
    "outcome" TEXT,
    "createdAt" BIGINT NOT NULL,

    PRIMARY KEY ("sessionId", "seq")
);

-- CreateIndex
CREATE INDEX "TciSession_projectId_expiresAt_idx" ON "TciSession"("projectId", "expiresAt");

-- CreateIndex
CREATE INDEX "TciCell_projectId_idx" ON "TciCell"("projectId");
