-- CreateTable
CREATE TABLE "Rollout" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "sourceDeploymentId" TEXT NOT NULL,
    "targetDeploymentId" TEXT NOT NULL,
    "strategy" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "spec" TEXT NOT NULL,
    "stepMs" INTEGER NOT NULL,
    "currentStep" INTEGER,
    "currentTrafficPercent" INTEGER,
    "originalSplit" TEXT,
    "stepEndsAt" BIGINT,
    "remainingMs" INTEGER,
    "pausedAt" BIGINT,
    "pauseReason" TEXT,
    "conditions" TEXT NOT NULL DEFAULT '[]',
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "startedAt" BIGINT,
    "completedAt" BIGINT,
    "updatedAt" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "RolloutStep" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "rolloutId" TEXT NOT NULL,
    "stepIndex" INTEGER NOT NULL,
    "trafficPercent" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "metrics" TEXT,
    "failureReason" TEXT,
    "startedAt" BIGINT,
    "completedAt" BIGINT
);

-- CreateIndex
CREATE INDEX "Rollout_endpointId_idx" ON "Rollout"("endpointId");

-- CreateIndex
CREATE INDEX "Rollout_projectId_idx" ON "Rollout"("projectId");

-- CreateIndex
CREATE UNIQUE INDEX "RolloutStep_rolloutId_stepIndex_key" ON "RolloutStep"("rolloutId", "stepIndex");
