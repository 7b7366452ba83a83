-- CreateTable
CREATE TABLE "RlModelResources" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "baseModel" TEXT NOT NULL,
    "loraEnabled" BOOLEAN NOT NULL,
    "numGeneratorReplicas" INTEGER NOT NULL,
    "optimizerConfig" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "erroredAt" BIGINT,
    "createdBy" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "RlModelResources_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RlSession" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "modelResourcesId" TEXT NOT NULL,
    "baseModel" TEXT NOT NULL,
    "displayName" TEXT,
    "metadata" TEXT NOT NULL DEFAULT '{}',
    "loraConfig" TEXT,
    "resumeFromCheckpoint" TEXT,
    "status" TEXT NOT NULL,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "erroredAt" BIGINT,
    "engine" TEXT NOT NULL,
    "trainer" TEXT,
    "sampler" TEXT,
    "stateVersion" INTEGER NOT NULL DEFAULT 0,
    "step" INTEGER NOT NULL DEFAULT 0,
    "weightsVersion" INTEGER NOT NULL DEFAULT 0,
    "nextSeq" INTEGER NOT NULL DEFAULT 0,
    "lastActivityAt" BIGINT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "RlSession_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RlOperation" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "input" TEXT NOT NULL,
    "output" TEXT,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "RlOperation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RlCheckpoint" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "bytes" TEXT NOT NULL,
    "modelId" TEXT,
    "modelName" TEXT,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "RlCheckpoint_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "RlModelResources_projectId_idx" ON "RlModelResources"("projectId");

-- CreateIndex
CREATE INDEX "RlSession_projectId_idx" ON "RlSession"("projectId");

-- CreateIndex
CREATE INDEX "RlSession_modelResourcesId_idx" ON "RlSession"("modelResourcesId");

-- CreateIndex
CREATE INDEX "RlOperation_projectId_idx" ON "RlOperation"("projectId");

-- CreateIndex
CREATE INDEX "RlOperation_sessionId_status_idx" ON "RlOperation"("sessionId", "status");

-- CreateIndex
CREATE UNIQUE INDEX "RlOperation_sessionId_seq_key" ON "RlOperation"("sessionId", "seq");

-- CreateIndex
CREATE INDEX "RlCheckpoint_sessionId_idx" ON "RlCheckpoint"("sessionId");

-- CreateIndex
CREATE INDEX "RlCheckpoint_modelId_idx" ON "RlCheckpoint"("modelId");
